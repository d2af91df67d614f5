// Package headgateotel traces headgate jobs with OpenTelemetry, from the enqueue to
// each attempt. It lives in a module of its own so that the headgate library does not
// depend on OpenTelemetry.
//
// EnqueueMiddleware (for rqueue.Config.EnqueueMiddleware) starts a PRODUCER span
// "send <queue>" per batch, a child of the caller's span, and writes its W3C trace
// context into each job as a tag (TraceparentTag, and TracestateTag when the caller's
// trace state fits a tag): the envelope has no metadata field, and tags travel with the
// job through every transition. WorkerMiddleware (for worker.Config.Middleware, first)
// starts a CONSUMER span "process <queue>" per attempt, linked to the producer's span
// (or, with Config.Child, its child), with the messaging attributes of the OpenTelemetry
// semantic conventions (messaging.system=headgate, messaging.destination.name,
// messaging.message.id, messaging.operation.type) and headgate.kind, headgate.partition,
// headgate.attempt, headgate.fence, headgate.rate_class and headgate.outcome. An attempt
// that fails (retry) or panics sets the span's status to Error.
package headgateotel
