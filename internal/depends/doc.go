// Package depends holds dependsOn once: the graph of which app is applied
// after which (apps[].dependsOn of syncd.yaml, spec.dependsOn of an App
// object), its cycles, the order that puts every app after its
// dependencies, the apps that depend on one, and the walk that says what
// an app waits for. Config validation, `syncd apply --config`, the
// syncd.yaml daemon and the App controller all use it.
//
// A Graph is a value built from a list of nodes (an app's name and its
// dependsOn, in the list's order); it never changes. The first node of a
// name stands for it. Entries naming no node of the list are no edges:
// they are reported where the list is validated, not here.
//
// Not decided here: whether a dependency is ready. That rule reads what
// each driver knows of the dependency (the daemon its /status and the
// revision its source resolved, the controller the App's Ready condition
// and generation, `syncd apply` whether it applied in this run), so each
// driver passes it to Waits as a function.
package depends
