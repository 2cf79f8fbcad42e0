// Package alert tells people about what syncd finds and does: drift,
// conflicts, hand-offs of fields between managers, prunes, errors and
// syncs. It sends them to the sinks listed under alerts[] in the config:
// Slack (incoming webhook, Block Kit), Microsoft Teams (incoming or
// Workflows webhook, Adaptive Card), Discord (webhook embeds) and a generic
// JSON webhook signed with HMAC-SHA256 (see VerifyWebhook).
//
// The daemon builds an Event from a stage's result and calls
// Notifier.Notify, which returns at once: every sink has its own bounded
// queue and sender goroutine, a per-sink rate limit, and retries with
// exponential backoff on HTTP 408, 429 (honouring Retry-After), 5xx and
// network errors. Outcomes are counted in Prometheus metrics
// (syncd_alerts_sent_total, syncd_alerts_failed_total,
// syncd_alerts_dropped_total, syncd_alerts_retries_total,
// syncd_alerts_suppressed_total, syncd_alerts_queue_length).
//
// What it guarantees:
//   - Notify never blocks on the network and never waits for a full queue:
//     the oldest queued alert is dropped and counted instead.
//   - A finding (drift, conflict, error) identified by its type, app,
//     object, cause (Event.Cause: an error's, see Failures), field paths
//     with classes and culprit managers is sent once while open, and one
//     "resolved" message follows when it clears.
//     One-shot events (sync, prune, handoff) are sent once per revision.
//   - Values of Secret .data and .stringData fields, of the Secret's
//     last-applied-configuration annotation and of fields marked Sensitive
//     are replaced by "<redacted>" before any sink sees them, whatever the
//     producer did.
//   - Payloads respect each provider's documented size limits; what does
//     not fit is cut with an ellipsis or summarised as "N more fields".
//   - URLs and HMAC keys are read from their files for every attempt, and
//     a URL never appears in an error or a metric: the sink is named
//     instead.
//
// What it does not guarantee:
//   - Delivery. An alert can be dropped (full queue, shutdown) or given up
//     on (4xx, retries exhausted); each case is counted, and ErrorHandler
//     is told about failures.
//   - Dedupe across restarts, or across Notifiers unless the new one
//     Inherits the old one's open findings: the memory of what was
//     alerted lives in the process. After a restart an open finding is
//     alerted again, and a resolution of a finding alerted before the
//     restart is not sent.
//   - Ordering across sinks, or exactly-once delivery: a request that timed
//     out after the provider accepted it is sent again.
//   - That a resolved message reaches a sink whose open message was
//     dropped or failed: the finding is forgotten then, so the next
//     occurrence is alerted afresh.
package alert
