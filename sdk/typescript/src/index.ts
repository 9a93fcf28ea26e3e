/**
 * The wsserver client SDK: sessions that survive dropped connections, tools, voice frames.
 * @packageDocumentation
 */

export { AudioPlayback, PlaybackTracker } from "./audio/playback.js";
export type { PlaybackOptions, PlaybackReport, PlaybackSource } from "./audio/playback.js";
export { captureConstraints, MicrophoneCapture } from "./audio/capture.js";
export type { AudioSink, CaptureOptions } from "./audio/capture.js";
export { pcm16ToFloat, Resampler } from "./audio/resampler.js";
export { CAPTURE_PROCESSOR, PLAYBACK_PROCESSOR, PROCESSORS_SOURCE, processorsUrl } from "./audio/worklets.js";
export { watchPageLifecycle } from "./lifecycle.js";
export type { PageTargets, Wakeable } from "./lifecycle.js";
export { AUDIO_HEADER_SIZE, AUDIO_IN, AUDIO_OUT, AudioFrameError, decodeAudioFrame, encodeAudioFrame, isAudioFrame, responseStreamId, streamResponseId } from "./audio_frame.js";
export type { AudioFrame } from "./audio_frame.js";
export { Backoff } from "./backoff.js";
export type { BackoffOptions } from "./backoff.js";
export { SessionClient } from "./client.js";
export type { CreateOptions, SessionClientOptions } from "./client.js";
export { ClientSession, SequenceGap } from "./client_session.js";
export type { ClientState, ResumePoint } from "./client_session.js";
export { CLOSE_CODES, closeDisposition, errorDisposition } from "./codes.js";
export type { CloseCodeInfo, Disposition } from "./codes.js";
export type { TokenSource } from "./connection.js";
export type { EventName, EventOf } from "./emitter.js";
export { AuthenticationError, ClientError, SessionClosed } from "./errors.js";
export { isEvent } from "./events.js";
export type * from "./events.js";
export { floatToPcm16, Microphone } from "./microphone.js";
export { PartialJson, PartialJsonError, parsePartial } from "./partial_json.js";
export type { ResponseResult } from "./response_result.js";
export { MemoryResumeStore, WebResumeStore } from "./resume_store.js";
export type { ResumeState, ResumeStore, StorageLike } from "./resume_store.js";
export { ToolBox } from "./tools.js";
export type { ToolHandler, ToolSpec } from "./tools.js";
export { globalSocketFactory, JSON_SUBPROTOCOL, TOKEN_SUBPROTOCOL_PREFIX } from "./transport.js";
export type { SocketFactory, SocketLike } from "./transport.js";
