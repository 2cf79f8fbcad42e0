package planner

import (
	"fmt"

	"syncd.dev/syncd/internal/config"
)

// newFromConfig builds a Planner for an app written as config: the tests
// here state apps the way users write them. It maps the fields the way
// reconcile's compileApp does, with the errors prefixed the same way.
func newFromConfig(c config.App, opts Options) (*Planner, error) {
	app := App{Name: c.Name, Namespace: c.Namespace, Manager: FieldManager(c.DefaultManager())}
	for i, s := range c.Split {
		sp, err := ParseSplit(s.Manager, s.Kinds, s.Paths)
		if err != nil {
			return nil, fmt.Errorf("app %q: split[%d]: %w", c.Name, i, err)
		}
		app.Splits = append(app.Splits, sp)
	}
	return New(app, opts)
}
