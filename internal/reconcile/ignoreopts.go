package reconcile

import (
	"fmt"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/ignore"
	"syncd.dev/syncd/internal/paths"
)

// ignoreOf compiles an app's ignore section into the rules drift, the
// applier and the plan share; nil when it has none. Errors name the
// syncd.yaml field.
func ignoreOf(rules []config.IgnoreRule) (*ignore.Rules, error) {
	out := make([]ignore.Rule, 0, len(rules))
	for i, r := range rules {
		rule := ignore.Rule{Names: r.Names, Namespaces: r.Namespaces, Managers: r.Managers}
		for _, k := range r.Kinds {
			rule.Kinds = append(rule.Kinds, config.GroupKind(k))
		}
		pats, err := paths.ParseAll(r.Paths)
		if err != nil {
			return nil, fmt.Errorf("ignore[%d].%w", i, err)
		}
		rule.Paths = pats
		out = append(out, rule)
	}
	rs, err := ignore.New(out)
	if err != nil {
		return nil, fmt.Errorf("ignore%w", err)
	}
	return rs, nil
}
