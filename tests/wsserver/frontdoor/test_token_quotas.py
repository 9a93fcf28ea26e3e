"""A client token is its own quota principal: one token cannot use up its account's limits."""

from __future__ import annotations

from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.frontdoor.credentials import Credentials
from tests.wsserver.frontdoor.http import connect_as, mint


async def test_failed_resumes_of_one_token_leave_the_account_able_to_resume(
    start_server: StartServer, creds: Credentials
) -> None:
    server = await start_server(**creds.settings(), failed_resume_burst=5)
    url = url_of(server)
    base = f"http://127.0.0.1:{server.port}"
    owner = await connect_as(url, key=creds.alice_key)
    ready = await owner.start()
    owner.abort()

    # A hostile app user guesses with a token minted by alice's backend, until locked out.
    attacker = await connect_as(url, token=await mint(base, creds.alice_key))
    codes = []
    for guess in range(12):
        await attacker.resume({**ready, "resume_token": f"wrt_guess{guess}"}, 0)
        codes.append((await attacker.until("error"))["code"])
    assert codes[-1] == "too_many_failed_resumes"

    # Alice's own client (her key, or another of her tokens) still resumes her session.
    for credential in ({"key": creds.alice_key}, {"token": await mint(base, creds.alice_key)}):
        again = await connect_as(url, **credential)  # type: ignore[arg-type]
        await again.resume(ready, 0)
        assert (await again.until("session.ready"))["resumed"] is True
        again.abort()
