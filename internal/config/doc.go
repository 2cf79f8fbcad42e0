// Package config reads and validates syncd.yaml (apiVersion syncd/v1alpha1,
// kind Config): the Git sources, the apps applied from them with their field
// managers, split rules and conflict policy, and the alert sinks. The
// format is documented field by field in docs/config.md.
//
// Load and Parse decode strictly: unknown fields, fields set twice, more
// than one YAML document and values of the wrong type are errors. Every
// problem in a file is reported at once, as an Errors value whose
// FieldErrors carry the file, the line, the field path
// ("apps[1].split[0].manager") and what to do.
//
// A Config returned without error passed validation: apiVersion and kind
// are exact; names are unique; every app names a known source; each source
// sets exactly one ref (branch, tag, semver, commit) and exactly one of
// interval and schedule, and its credentials fit its URL; manager names
// are stable-looking, not reserved, and not shared between apps; alert
// types, events and key files are consistent; every dependsOn entry names
// another app of the file, not in drift mode detect, and the dependencies
// form no cycle (a cycle is reported with every app on it).
// DependencyGraph is the apps' dependsOn graph (package depends), and
// DependencyOrder orders apps so that each follows its dependencies. Load
// makes relative file names absolute against the directory of the config
// file.
//
// What it does NOT guarantee: files named in the config (tokens, keys,
// known_hosts, alert URLs) are not opened, so they may be missing or
// malformed; nothing touches the network or the cluster, so a URL may not
// resolve and a ref may not exist; field paths in split and conflict rules
// are only checked for syntax (the planner parses them), and kinds only for
// form (the cluster may not serve them). The "unstable manager name" check
// is a heuristic over the name's text.
package config
