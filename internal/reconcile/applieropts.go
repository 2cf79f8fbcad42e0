package reconcile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/paths"
)

// The applier takes its own types (applier.PolicySpec,
// applier.MigrationSpec); this file is where an app's conflicts and
// migrate sections become them. Errors name the syncd.yaml field; the
// config package has already refused what it can check, so they are for
// configs built without config.Parse.

// policyOf compiles an app's conflicts section.
func policyOf(cp config.ConflictPolicy) (*applier.Policy, error) {
	spec, err := policySpec(cp)
	if err != nil {
		return nil, err
	}
	p, err := applier.NewPolicy(spec)
	if err != nil {
		return nil, fmt.Errorf("conflicts.%w", err)
	}
	return p, nil
}

// policySpec parses the kinds and field paths of an app's conflict rules.
func policySpec(cp config.ConflictPolicy) (applier.PolicySpec, error) {
	spec := applier.PolicySpec{Default: applier.ConflictAction(cp.DefaultAction())}
	for i, r := range cp.Rules {
		rule := applier.PolicyRule{Names: r.Names, Managers: r.Managers, Action: applier.ConflictAction(r.Action)}
		for _, k := range r.Kinds {
			rule.Kinds = append(rule.Kinds, config.GroupKind(k))
		}
		pats, err := paths.ParseAll(r.Paths)
		if err != nil {
			return applier.PolicySpec{}, fmt.Errorf("conflicts.rules[%d].%w", i, err)
		}
		rule.Paths = pats
		spec.Rules = append(spec.Rules, rule)
	}
	return spec, nil
}

// policyDigest is a digest of an app's conflicts section as written, for
// the inventory's record of the policy a yield was decided under
// (inventory.App.ConflictPolicy): any edit of the section changes it.
func policyDigest(cp config.ConflictPolicy) string {
	// A struct of strings and slices of strings: it always encodes.
	b, _ := json.Marshal(cp)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// migrationOf compiles an app's migrate section; nil means none.
func migrationOf(m *config.Migrate) (*applier.Migration, error) {
	if m == nil {
		return nil, nil
	}
	switch m.Mode {
	case "", config.MigrateSameValue, config.MigrateForce:
	default:
		return nil, fmt.Errorf("migrate.mode: %q is not a migrate mode; use %s or %s", m.Mode, config.MigrateSameValue, config.MigrateForce)
	}
	mig, err := applier.NewMigration(&applier.MigrationSpec{From: m.From, Force: m.Forces()})
	if err != nil {
		return nil, fmt.Errorf("migrate.%w", err)
	}
	return mig, nil
}
