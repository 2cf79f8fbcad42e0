// Package apptree builds an app's tree: the objects of its inventory
// grouped by apply stage and kind, each with its health (kstatus), the
// outcome syncd recorded for it (applied, apply pending, prune refused)
// and the field managers that write it. `syncd tree` prints it; any
// reader of an inventory (the UI) can build the same.
package apptree
