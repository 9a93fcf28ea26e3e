"""The browser demo page the worker serves at ``/demo/``: static files shipped in the
package (the TypeScript SDK's built ES modules among them) and the small token endpoint
the page connects with."""
