// Package appedit makes the one-shot edits of an App object that `syncd
// reconcile|suspend|resume app` and the buttons of `syncd ui` make: a
// reconcile request (the syncd.dev/requestedAt annotation set to now),
// spec.suspend set or cleared. Both callers go through Apply, so a
// button does exactly what its command does.
//
// The edits are JSON merge patches (like kubectl annotate and flux
// suspend), not server-side applies, under Manager:
//   - each is a one-shot imperative edit of one field, not a declaration
//     syncd-cli keeps holding: an apply would make syncd-cli an owner of
//     spec.suspend that a later apply of the App from Git conflicts with,
//     and the annotation's value changes on every reconcile (an apply
//     would need force each time another tool, say kubectl annotate,
//     last set it);
//   - a patch of a missing App is a 404, where an apply would try to
//     create a half App.
//
// Apply does not wait for the controller to handle a request (the
// command's --wait does), and it does not guarantee that a controller
// runs at all: the edit is only recorded on the App. An edit the
// caller's RBAC refuses fails with the API server's message.
package appedit
