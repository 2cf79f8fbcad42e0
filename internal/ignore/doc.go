// Package ignore matches an app's drift ignore rules (apps[].ignore):
// fields that a mutating webhook or an operator changes without a field
// manager of its own, or that another writer changes by hand on purpose,
// whose difference from Git is neither reported as drift, nor alerted,
// nor corrected. The drift detector sets such findings aside, the applier
// sends their live value when it writes an existing object, and the plan
// marks their diff lines "ignored": one matcher for the three.
//
// A rule matches a field of an object when every list it sets matches:
// the object's kind ("group/Kind"), its name and namespace (path.Match
// globs), the field (a field-path pattern of package paths, matching the
// field and everything below it) and, when Managers is set, one of the
// managers other than the app's own that own the field now.
//
// Not guaranteed: a rule is matched against the paths syncd declares and
// the owners the API server records; it cannot tell a webhook's mutation
// from a hand edit that leaves no manager. An object that does not exist
// yet is created with Git's value: rules only ever keep a live value.
package ignore
