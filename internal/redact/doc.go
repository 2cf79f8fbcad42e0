// Package redact holds syncd's one set of redaction rules: which objects
// are Secrets, which of their fields (and of any object's) hold values
// that are never printed, the marker printed instead, and the scrubbing of
// error text that may echo object content. Every output path — render,
// plan, drift, alerts, Events, logs, /status and error messages — calls
// this package; no other package decides what is secret.
//
// The rules, for an object of group/kind GK and a field path P:
//
//   - an object is a Secret when its group is "" (core) and its kind is
//     Secret, whatever its version;
//   - every field below a Secret's data and stringData is sensitive;
//   - the kubectl.kubernetes.io/last-applied-configuration annotation of
//     any object is sensitive (it is a copy of the object);
//   - every field an app's sensitive rule matches for GK (config
//     apps[].sensitive), and everything below it, is sensitive;
//   - every field of GK where a render put a value it decrypted (SOPS,
//     apps[].decryption; Rules.WithFields, from the plan) is sensitive.
//
// Paths are matched as structured-merge-diff field paths, never as text.
//
// Values known to be secret are also masked inside any string (Secrets,
// an Aho-Corasick automaton built once per set): in objects through
// Rules.WithSecrets (Object, Pair, Value), in text through the
// process-wide set Remember keeps per app (Known, which Text, Error,
// Sprintf and LogHandler apply). Only values of at least MinFragment bytes
// are searched for inside other text; shorter ones are hidden as whole
// field values by the rules above.
//
// Error scrubbing (Error, Text) keeps field paths and reasons and drops the
// values that API-server validation errors, structured-merge-diff type
// errors and kustomize/kyaml errors echo. It works on the text of known
// error shapes.
//
// Not guaranteed: Text cannot know a value that an error prints without
// one of the shapes it recognizes, unless it is a known secret value
// (Remember) of at least MinFragment bytes (a producer that formats a field's value
// into its own message with %v defeats it); such producers must not print
// values. Redaction of an object hides values, never names: map keys such
// as a Secret's data keys stay visible.
package redact
