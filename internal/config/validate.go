package config

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"syncd.dev/syncd/internal/alertevent"
)

// validator checks a decoded Config against the rules of the config
// contract and records every problem with its line.
type validator struct {
	file string
	loc  *locator
	errs Errors
}

func (v *validator) errorf(field, format string, args ...any) {
	v.errs = append(v.errs, FieldError{
		File:    v.file,
		Line:    v.loc.line(field),
		Field:   field,
		Message: fmt.Sprintf(format, args...),
	})
}

func (v *validator) config(c *Config) {
	v.header("apiVersion", c.APIVersion, APIVersion)
	v.header("kind", c.Kind, Kind)

	sources := nameIndex{what: "source", list: "sources"}
	for i, s := range c.Sources {
		v.source(index("sources", i), s)
		v.unique(&sources, i, s.Name)
	}

	apps := nameIndex{what: "app", list: "apps"}
	installer := -1
	for i, a := range c.Apps {
		p := index("apps", i)
		v.app(p, a, c)
		if a.InstallsSyncd {
			if installer >= 0 {
				v.errorf(p+".installsSyncd", "app %q (apps[%d]) already installs syncd; only the one app that installs syncd itself may set installsSyncd", c.Apps[installer].Name, installer)
			} else {
				installer = i
			}
		}
		v.unique(&apps, i, a.Name)
	}
	v.managers(c)
	v.dependencies(c)
	v.clusters(c)

	alerts := nameIndex{what: "alert", list: "alerts"}
	for i, a := range c.Alerts {
		v.alert(index("alerts", i), a)
		v.unique(&alerts, i, a.Name)
	}
}

// header checks a field of the file's header (apiVersion, kind), which
// has exactly one allowed value, want.
func (v *validator) header(field, got, want string) {
	switch got {
	case want:
	case "":
		v.errorf(field, "%s is required; set %s: %s", field, field, want)
	default:
		v.errorf(field, "%q is not supported; set %s: %s", got, field, want)
	}
}

// nameIndex holds the names used so far in one list of the config (sources,
// apps, alerts), each with the index of its first use.
type nameIndex struct {
	what, list string
	first      map[string]int
}

// unique reports the name of entry i of the list when an earlier entry
// already uses it, and otherwise records it. An empty name is left to the
// entry's own checks.
func (v *validator) unique(n *nameIndex, i int, name string) {
	if name == "" {
		return
	}
	if first, dup := n.first[name]; dup {
		v.errorf(index(n.list, i)+".name", "%s name %q is already used by %s[%d]; %s names must be unique", n.what, name, n.list, first, n.what)
		return
	}
	if n.first == nil {
		n.first = map[string]int{}
	}
	n.first[name] = i
}

// groupField is one member of a group of fields of which one must be set.
type groupField struct{ name, value string }

// exactlyOne checks a group of fields of which exactly one must be set:
// none is reported at p with missing, two or more at the second one set,
// with keep saying what to do. It returns the names of the fields set.
func (v *validator) exactlyOne(p string, group []groupField, missing, keep string) []string {
	var set []string
	for _, f := range group {
		if f.value != "" {
			set = append(set, f.name)
		}
	}
	switch len(set) {
	case 0:
		v.errorf(p, "%s", missing)
	case 1:
	default:
		v.errorf(p+"."+set[1], "%s and %s are both set; %s", set[0], set[1], keep)
	}
	return set
}

// semverRange checks a semver constraint (a source's semver field).
func (v *validator) semverRange(field, constraint string) {
	if _, err := semver.NewConstraint(constraint); err != nil {
		v.errorf(field, "%q is not a semver constraint (%v); write e.g. \">=1.2.0 <2.0.0\", \"~1.4\" or \"^2\"", constraint, err)
	}
}

func (v *validator) dnsLabel(field, what, value string) {
	if errs := validation.IsDNS1123Label(value); len(errs) > 0 {
		v.errorf(field, "%q is not a valid %s: %s", value, what, strings.Join(errs, "; "))
	}
}

func (v *validator) source(p string, s Source) {
	if s.Name == "" {
		v.errorf(p+".name", "name is required; apps refer to the source by it")
	} else {
		v.dnsLabel(p+".name", "source name", s.Name)
	}
	switch s.Kind() {
	case SourceHelm:
		v.helmSourceOf(p, s)
		return
	case SourceOCI:
		v.ociSource(p, s)
		return
	}
	v.git(p+".git", s.Git)
}

// URL kinds as far as credentials are concerned.
const (
	urlHTTP = "http"
	urlSSH  = "ssh"
	urlFile = "file"
)

// scpLikeRE matches Git's scp-like ssh syntax, [user@]host:path.
var scpLikeRE = regexp.MustCompile(`^(?:[A-Za-z0-9._~+-]+@)?(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):[^\s]+$`)

// classifyURL returns the kind of a Git URL, or a problem. Problems never
// repeat the URL, which may embed a secret.
func classifyURL(raw string) (kind string, loopback bool, problem string) {
	const forms = "use https://host/org/repo.git, ssh://git@host/org/repo.git, git@host:org/repo.git or file:///path/to/repo.git"
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
		if err != nil {
			return "", false, "the URL is not valid; " + forms
		}
		if _, hasPassword := u.User.Password(); hasPassword {
			return "", false, "the URL embeds a password or token; remove it from the URL, put it in a file and set auth.tokenFile"
		}
		switch strings.ToLower(u.Scheme) {
		case "https", "http":
			if u.Host == "" {
				return "", false, "the URL has no host; " + forms
			}
			host := u.Hostname()
			ip := net.ParseIP(host)
			return urlHTTP, host == "localhost" || (ip != nil && ip.IsLoopback()), ""
		case "ssh":
			if u.Host == "" {
				return "", false, "the URL has no host; " + forms
			}
			return urlSSH, false, ""
		case "file":
			if u.Path == "" || u.Host != "" {
				return "", false, "a file URL needs an absolute path and no host, e.g. file:///srv/git/app.git"
			}
			return urlFile, false, ""
		case "git":
			return "", false, "the git:// protocol is neither authenticated nor encrypted; use https or ssh"
		default:
			return "", false, fmt.Sprintf("the URL scheme %q is not supported; %s", u.Scheme, forms)
		}
	}
	if scpLikeRE.MatchString(raw) {
		return urlSSH, false, ""
	}
	if strings.HasPrefix(raw, "/") {
		return "", false, "the URL is a local path; write it as a file URL, e.g. file://" + raw
	}
	return "", false, "the URL is not one git can fetch; " + forms
}

func describeURLKind(kind string) string {
	switch kind {
	case urlHTTP:
		return "an http(s) URL"
	case urlSSH:
		return "an ssh URL"
	case urlFile:
		return "a file URL"
	}
	return "an unusable URL"
}

var commitRE = regexp.MustCompile(`^(?:[0-9a-fA-F]{40}|[0-9a-fA-F]{64})$`)

func (v *validator) git(p string, g GitSource) {
	kind := ""
	loopback := false
	if g.URL == "" {
		v.errorf(p+".url", "url is required, e.g. https://github.com/org/repo.git or git@github.com:org/repo.git")
	} else {
		var prob string
		kind, loopback, prob = classifyURL(g.URL)
		if prob != "" {
			v.errorf(p+".url", "%s", prob)
		}
	}

	v.exactlyOne(p, []groupField{{"branch", g.Branch}, {"tag", g.Tag}, {"semver", g.Semver}, {"commit", g.Commit}},
		"no revision to follow; set one of branch, tag, semver or commit",
		"keep exactly one of branch, tag, semver and commit")
	if g.Branch != "" {
		v.refName(p+".branch", "branch", "refs/heads/", g.Branch)
	}
	if g.Tag != "" {
		v.refName(p+".tag", "tag", "refs/tags/", g.Tag)
	}
	if g.Semver != "" {
		v.semverRange(p+".semver", g.Semver)
	}
	if g.Commit != "" && !commitRE.MatchString(g.Commit) {
		v.errorf(p+".commit", "%q is not a full commit hash; write all 40 (SHA-1) or 64 (SHA-256) hex digits, abbreviated hashes are ambiguous", g.Commit)
	}

	switch {
	case g.Interval == nil && g.Schedule == "":
		v.errorf(p, "no polling schedule; set interval (e.g. 5m) or schedule (cron, e.g. \"*/5 * * * *\")")
	case g.Interval != nil && g.Schedule != "":
		v.errorf(p+".schedule", "interval and schedule are both set; keep one")
	case g.Interval != nil && g.Interval.Duration <= 0:
		v.errorf(p+".interval", "interval must be positive, e.g. 1m or 5m; got %s", g.Interval.Duration)
	case g.Schedule != "":
		if prob := scheduleProblem(g.Schedule); prob != "" {
			v.errorf(p+".schedule", "%s", prob)
		}
	}

	v.auth(p, g, kind, loopback)
	v.verify(p, g)
}

func (v *validator) refName(field, what, prefix, name string) {
	if strings.HasPrefix(name, "refs/") {
		v.errorf(field, "write the %s name without %q: %q", what, prefix, strings.TrimPrefix(name, prefix))
		return
	}
	if err := plumbing.ReferenceName(prefix + name).Validate(); err != nil {
		v.errorf(field, "%q is not a valid Git %s name (see git check-ref-format)", name, what)
	}
}

// scheduleProblem parses a cron schedule the way the source will:
// robfig/cron's standard five-field parser with descriptors (@hourly,
// @every 5m). It returns "" when the schedule is usable.
func scheduleProblem(spec string) (problem string) {
	const help = "write five cron fields (\"*/5 * * * *\"), a descriptor (@hourly, @daily) or @every with a duration (@every 5m)"
	// cron v3.0.1 slices out of range on a time zone prefix without a
	// schedule after it ("TZ=UTC"); catch that here rather than panic.
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		if !strings.Contains(spec, " ") {
			return fmt.Sprintf("%q has a time zone but no schedule; %s", spec, help)
		}
	}
	defer func() {
		if r := recover(); r != nil {
			problem = fmt.Sprintf("%q is not a cron schedule; %s", spec, help)
		}
	}()
	if _, err := cron.ParseStandard(spec); err != nil {
		return fmt.Sprintf("%q is not a cron schedule (%v); %s", spec, err, help)
	}
	if rest, ok := strings.CutPrefix(spec, "@every "); ok {
		if d, err := time.ParseDuration(strings.TrimSpace(rest)); err == nil && d < time.Second {
			return fmt.Sprintf("%q: @every needs a duration of at least 1s", spec)
		}
	}
	return ""
}

func (v *validator) auth(p string, g GitSource, kind string, loopback bool) {
	a := g.Auth
	if a == nil {
		if kind == urlSSH {
			v.errorf(p+".auth", "ssh URLs need auth.sshKeyFile and auth.knownHostsFile; syncd checks the server's host key and never skips the check")
		}
		return
	}
	p += ".auth"
	token := a.TokenFile != ""
	ssh := a.SSHKeyFile != "" || a.KnownHostsFile != ""
	switch {
	case token && ssh:
		v.errorf(p, "tokenFile and sshKeyFile/knownHostsFile are both set; use tokenFile with https URLs or sshKeyFile with knownHostsFile with ssh URLs, not both")
		return
	case !token && !ssh:
		v.errorf(p, "auth sets no credentials; set tokenFile (https) or sshKeyFile and knownHostsFile (ssh), or remove auth")
		return
	}
	if a.Username != "" && !token {
		v.errorf(p+".username", "username is only used with tokenFile (HTTP basic auth); remove it, the ssh user goes in the URL")
	}
	if token {
		switch kind {
		case urlHTTP:
			if strings.HasPrefix(strings.ToLower(g.URL), "http://") && !loopback {
				v.errorf(p+".tokenFile", "the token would be sent unencrypted over http://; use an https:// URL (plain http is allowed only to localhost)")
			}
		case urlSSH, urlFile:
			v.errorf(p+".tokenFile", "tokenFile is sent as HTTP basic auth and works only with https:// URLs, but this source has %s; use sshKeyFile with knownHostsFile for ssh URLs", describeURLKind(kind))
		}
	}
	if ssh {
		if a.SSHKeyFile == "" {
			v.errorf(p+".sshKeyFile", "sshKeyFile is required with knownHostsFile; set it to the file holding the private key")
		}
		if a.KnownHostsFile == "" {
			v.errorf(p+".knownHostsFile", "knownHostsFile is required with sshKeyFile: syncd checks the server's host key and has no option to skip the check; create it with e.g. ssh-keyscan github.com > known_hosts")
		}
		if kind == urlHTTP || kind == urlFile {
			v.errorf(p+".sshKeyFile", "SSH keys work only with ssh URLs (ssh://git@host/org/repo.git or git@host:org/repo.git), but this source has %s; use tokenFile, or change the URL", describeURLKind(kind))
		}
	}
}

func (v *validator) verify(p string, g GitSource) {
	vf := g.Verify
	if vf == nil {
		return
	}
	p += ".verify"
	switch vf.Mode {
	case VerifyHead:
	case VerifyTag:
		if g.Branch != "" || g.Commit != "" {
			v.errorf(p+".mode", "mode tag verifies the signature of the tag being followed, but this source follows a %s; use mode head, or follow a tag or semver", map[bool]string{true: "branch", false: "commit"}[g.Branch != ""])
		}
	case "":
		v.errorf(p+".mode", "mode is required; use head (verify the commit's signature) or tag (verify the tag's signature)")
	default:
		v.errorf(p+".mode", "%q is not a verification mode; use head or tag", vf.Mode)
	}
	if vf.KeysFile == "" {
		v.errorf(p+".keysFile", "keysFile is required; set it to a file of armored OpenPGP public keys trusted to sign")
	}
	if vf.AllowRewrites && g.Branch == "" {
		v.errorf(p+".allowRewrites", "allowRewrites applies to branch sources only (only a branch head is checked to descend from the last verified head); remove it")
	}
}

func (v *validator) app(p string, a App, c *Config) {
	v.appName(p, a.Name)
	v.appSource(p, a.Source, c.Sources)
	if a.Path != "" {
		if prob := treePathProblem(a.Path); prob != "" {
			v.errorf(p+".path", "%s", prob)
		}
	}
	if a.Namespace != "" {
		v.dnsLabel(p+".namespace", "namespace", a.Namespace)
	}
	v.handoff(p, a.Handoff)
	v.migrate(p+".migrate", a.Migrate, c)
	v.timeout(p, a)
	v.dryRunAll(p, a)
	v.serviceAccount(p, a)
	v.splits(p, a)
	v.pruning(p, a)
	v.driftMode(p, a.Drift.Mode)
	v.sensitive(p, a.Sensitive)
	v.substitution(p, a)
	v.decryption(p+".decryption", a.Decryption)
	v.conflicts(p+".conflicts", a.Conflicts)
	v.ignore(p+".ignore", a.Ignore)
	v.helm(p+".helm", a)
	src, ok := c.Source(a.Source)
	v.helmChart(p, a, src, ok)
	v.valuesSource(p, a, c)
	v.cluster(p, p+".cluster", a)
}

// decryption checks an app's decryption section; dp is its field.
func (v *validator) decryption(dp string, d *Decryption) {
	if d == nil {
		return
	}
	switch d.Provider {
	case "":
		v.errorf(dp+".provider", "provider is required; set it to sops")
	case DecryptionSOPS:
	default:
		v.errorf(dp+".provider", "%q is not a decryption provider; use sops", d.Provider)
	}
	if d.KeysFile == "" {
		v.errorf(dp+".keysFile", "keysFile is required; name the file holding the age identities or OpenPGP private keys the app's files are encrypted for")
	}
}

func (v *validator) appName(p, name string) {
	if name == "" {
		v.errorf(p+".name", "name is required; it becomes part of the app's manager and object names")
		return
	}
	v.dnsLabel(p+".name", "app name (lowercase letters, digits and -, at most 63)", name)
}

// appSource checks that an app names one of the declared sources.
func (v *validator) appSource(p, source string, sources []Source) {
	switch {
	case source == "":
		v.errorf(p+".source", "source is required; set it to the name of one of the sources")
	case !slices.ContainsFunc(sources, func(s Source) bool { return s.Name == source }):
		names := make([]string, 0, len(sources))
		for _, s := range sources {
			if s.Name != "" {
				names = append(names, s.Name)
			}
		}
		if len(names) == 0 {
			v.errorf(p+".source", "unknown source %q; no sources are declared, add one under sources", source)
		} else {
			v.errorf(p+".source", "unknown source %q; declared sources: %s", source, strings.Join(names, ", "))
		}
	}
}

func (v *validator) handoff(p, mode string) {
	switch mode {
	case "", HandoffHold, HandoffRelease:
	default:
		v.errorf(p+".handoff", "%q is not a handoff mode; use hold (default) or release", mode)
	}
}

// timeout checks an app's wait timeout, which only means something with
// wait.
func (v *validator) timeout(p string, a App) {
	if a.Timeout != nil && a.Timeout.Duration <= 0 {
		v.errorf(p+".timeout", "timeout must be a positive duration such as 5m")
	}
	if a.Timeout != nil && !a.Wait {
		v.errorf(p+".timeout", "timeout only applies with wait: true; set wait: true or drop timeout")
	}
}

// dryRunAll checks that dryRunAll comes with validation on, the only
// time it means something.
func (v *validator) dryRunAll(p string, a App) {
	if a.DryRunAll && !a.Validates() {
		v.errorf(p+".dryRunAll", "dryRunAll only applies with validation on; remove validate: false or drop dryRunAll")
	}
}

// serviceAccount checks the name of the service account an app applies
// as, which is looked up in the app's namespace.
func (v *validator) serviceAccount(p string, a App) {
	if a.ServiceAccountName == "" {
		return
	}
	v.dnsLabel(p+".serviceAccountName", "service account name", a.ServiceAccountName)
	if a.Namespace == "" {
		v.errorf(p+".serviceAccountName", "the service account is looked up in the app's namespace: set namespace too")
	}
}

// splits checks an app's split rules; splitManager checks their managers.
func (v *validator) splits(p string, a App) {
	// Without a name the app has no default manager to collide with (the
	// missing name is its own error).
	def := ""
	if a.Name != "" {
		def = a.DefaultManager()
	}
	splits := map[string]int{}
	for i, s := range a.Split {
		sp := index(p+".split", i)
		v.splitManager(sp, s.Manager, i, def, splits)
		v.kinds(sp+".kinds", s.Kinds)
		if len(s.Paths) == 0 {
			v.errorf(sp+".paths", "paths is required; list the fields this manager owns, e.g. .spec.replicas")
		}
		v.fieldPaths(sp+".paths", s.Paths)
	}
}

// splitManager checks the manager of split[i]: required, not the app's
// default manager def ("" when it has none), and not the manager of an earlier rule (splits maps
// each manager seen so far to its rule's index, and gains this one).
func (v *validator) splitManager(sp, manager string, i int, def string, splits map[string]int) {
	switch {
	case manager == "":
		v.errorf(sp+".manager", "manager is required; it owns the fields this rule splits off")
	case manager == def:
		v.errorf(sp+".manager", "%q is the app's default manager; a split manager must differ from it or the split does nothing", manager)
	default:
		if first, dup := splits[manager]; dup {
			v.errorf(sp+".manager", "%q is also the manager of split[%d] of this app; merge the two rules or rename one", manager, first)
		} else {
			splits[manager] = i
		}
	}
}

// pruning checks how much and in what way an app may delete.
func (v *validator) pruning(p string, a App) {
	if a.PruneBudget != nil && (*a.PruneBudget < 0 || *a.PruneBudget > 100) {
		v.errorf(p+".pruneBudget", "%d is not a percentage; use 0 to 100 (the largest share of the app's objects one prune may delete; default %d)", *a.PruneBudget, DefaultPruneBudget)
	}
	if a.Adopted != "" && a.Adopted != AdoptedOrphan && a.Adopted != AdoptedDelete {
		v.errorf(p+".adopted", "%q is not an adopted action; use %s (default: leave the object, remove syncd's label and managers) or %s", a.Adopted, AdoptedOrphan, AdoptedDelete)
	}
}

func (v *validator) driftMode(p, mode string) {
	switch mode {
	case "", DriftCorrect, DriftDetect:
	default:
		v.errorf(p+".drift.mode", "%q is not a drift mode; use %s (default: apply and correct drift under the conflict policy) or %s (never write to the cluster, only report drift)", mode, DriftCorrect, DriftDetect)
	}
}

func (v *validator) sensitive(p string, rules []SensitiveRule) {
	for i, s := range rules {
		sp := index(p+".sensitive", i)
		v.kinds(sp+".kinds", s.Kinds)
		if len(s.Paths) == 0 {
			v.errorf(sp+".paths", "paths is required; list the fields whose values must never be printed, e.g. .data.password")
		}
		v.fieldPaths(sp+".paths", s.Paths)
	}
}

// conflicts checks an app's conflict policy; cp is its field.
func (v *validator) conflicts(cp string, c ConflictPolicy) {
	if c.Default != "" && !validAction(c.Default) {
		v.errorf(cp+".default", "%q is not a conflict action; use fail, force or yield", c.Default)
	}
	for i, r := range c.Rules {
		rp := index(cp+".rules", i)
		switch {
		case r.Action == "":
			v.errorf(rp+".action", "action is required; use fail, force or yield")
		case !validAction(r.Action):
			v.errorf(rp+".action", "%q is not a conflict action; use fail, force or yield", r.Action)
		}
		v.fieldMatch(rp, fieldMatch{Kinds: r.Kinds, Names: r.Names, Paths: r.Paths, Managers: r.Managers})
	}
}

// ignore checks an app's drift ignore rules; ip is their field.
func (v *validator) ignore(ip string, rules []IgnoreRule) {
	for i, r := range rules {
		rp := index(ip, i)
		if len(r.Paths) == 0 {
			v.errorf(rp+".paths", "at least one field path is required (an ignore rule ignores fields, never whole objects; use the syncd.dev/reconcile: disabled annotation for that)")
		}
		v.fieldMatch(rp, fieldMatch{Kinds: r.Kinds, Names: r.Names, Namespaces: r.Namespaces, Paths: r.Paths, Managers: r.Managers})
	}
}

// fieldMatch is what a conflict or an ignore rule matches fields by: the
// object's kind, name and namespace, the field path, and the other
// managers that own the field. An empty list matches everything.
type fieldMatch struct {
	Kinds, Names, Namespaces, Paths, Managers []string
}

// fieldMatch checks the lists of a rule that matches fields; rp is the
// rule's field.
func (v *validator) fieldMatch(rp string, m fieldMatch) {
	v.kinds(rp+".kinds", m.Kinds)
	v.globs(rp+".names", m.Names)
	v.globs(rp+".namespaces", m.Namespaces)
	v.fieldPaths(rp+".paths", m.Paths)
	v.globs(rp+".managers", m.Managers)
}

// kinds checks a list of kinds; field is the list's.
func (v *validator) kinds(field string, kinds []string) {
	for j, k := range kinds {
		if prob := kindProblem(k); prob != "" {
			v.errorf(index(field, j), "%s", prob)
		}
	}
}

// fieldPaths checks a list of field paths; field is the list's.
func (v *validator) fieldPaths(field string, fieldPaths []string) {
	for j, fp := range fieldPaths {
		if prob := fieldPathProblem(fp); prob != "" {
			v.errorf(index(field, j), "%s", prob)
		}
	}
}

// globs checks a list of glob patterns; field is the list's.
func (v *validator) globs(field string, patterns []string) {
	for j, g := range patterns {
		if prob := globProblem(g); prob != "" {
			v.errorf(index(field, j), "%s", prob)
		}
	}
}

func validAction(a Action) bool {
	return a == ActionFail || a == ActionForce || a == ActionYield
}

// treePathProblem checks an app's directory inside the source's tree.
func treePathProblem(p string) string {
	switch {
	case strings.Contains(p, `\`):
		return fmt.Sprintf("%q: use forward slashes in paths", p)
	case strings.HasPrefix(p, "/"):
		return fmt.Sprintf("%q is absolute; write the directory relative to the repository root, e.g. deploy/prod", p)
	case slices.Contains(strings.Split(p, "/"), ".."):
		return fmt.Sprintf("%q leaves the repository (..); write a directory inside it, relative to the root", p)
	case path.Clean(p) != p:
		return fmt.Sprintf("%q is not in clean form; write %q", p, path.Clean(p))
	}
	return ""
}

// managerUse is one place a field manager name comes from.
type managerUse struct {
	app   string
	field string
}

// managers checks every manager name of every app (the default, written
// or derived from the name, and the split managers) and that no two apps
// share one.
func (v *validator) managers(c *Config) {
	first := map[string]managerUse{}
	for i, a := range c.Apps {
		p := index("apps", i)
		type use struct{ name, field, what string }
		var uses []use
		switch {
		case a.Manager != "":
			uses = append(uses, use{a.Manager, p + ".manager", ""})
		case a.Name != "":
			uses = append(uses, use{a.DefaultManager(), p + ".name", "the default manager derived from the app name: "})
		}
		for j, s := range a.Split {
			if s.Manager != "" {
				uses = append(uses, use{s.Manager, index(p+".split", j) + ".manager", ""})
			}
		}
		for _, u := range uses {
			for _, prob := range managerProblems(u.name) {
				v.errorf(u.field, "%s%s", u.what, prob)
			}
			prev, seen := first[u.name]
			switch {
			case !seen:
				first[u.name] = managerUse{app: a.Name, field: u.field}
			case prev.app != a.Name:
				v.errorf(u.field, "manager %q is also used by app %q (%s); apps %q and %q would take each other's fields and prune each other's objects, give each app its own managers",
					u.name, prev.app, prev.field, prev.app, a.Name)
			}
		}
	}
}

// migrate checks an app's migrate section: a mode it knows, and managers
// to take over that are no app's own (taking another app's fields would
// let one app rewrite another's objects; the app's own managers move
// between themselves anyway).
func (v *validator) migrate(p string, m *Migrate, c *Config) {
	if m == nil {
		return
	}
	switch m.Mode {
	case "", MigrateSameValue, MigrateForce:
	default:
		v.errorf(p+".mode", "%q is not a migrate mode; use %s (default: only fields whose live value Git does not change move) or %s (fields with another value are taken too)", m.Mode, MigrateSameValue, MigrateForce)
	}
	if len(m.From) == 0 {
		v.errorf(p+".from", "from is required; list the managers whose fields the app takes over, e.g. [kubectl-client-side-apply, kustomize-controller]")
	}
	for i, g := range m.From {
		fp := index(p+".from", i)
		if prob := globProblem(g); prob != "" {
			v.errorf(fp, "%s", prob)
			continue
		}
		if app, manager, ok := appManagerMatching(c, g); ok {
			v.errorf(fp, "%q matches manager %q of app %q; migrate takes over other tools' fields, never an app's: name the tool's manager instead", g, manager, app)
		}
	}
}

// appManagerMatching returns the first manager of an app in c (its
// handoff manager included) that the glob g matches.
func appManagerMatching(c *Config, g string) (app, manager string, ok bool) {
	for _, a := range c.Apps {
		for _, m := range a.Managers() {
			for _, name := range []string{m, m + HandoffSuffix} {
				if matched, _ := path.Match(g, name); matched {
					return a.Name, name, true
				}
			}
		}
	}
	return "", "", false
}

var alertTypes = []string{AlertSlack, AlertMSTeams, AlertDiscord, AlertWebhook}

var alertEvents = alertevent.All()

func (v *validator) alert(p string, a Alert) {
	if a.Name == "" {
		v.errorf(p+".name", "name is required; it names the alert in logs and metrics")
	}
	switch {
	case a.Type == "":
		v.errorf(p+".type", "type is required; use %s", strings.Join(alertTypes, ", "))
	case !slices.Contains(alertTypes, a.Type):
		v.errorf(p+".type", "%q is not an alert type; use %s", a.Type, strings.Join(alertTypes, ", "))
	}
	if a.URLFile == "" {
		v.errorf(p+".urlFile", "urlFile is required; set it to a file holding the %s URL (it is kept out of the config because it embeds a secret)", cmp.Or(a.Type, "webhook"))
	}
	switch {
	case a.Type == AlertWebhook && a.HMACKeyFile == "":
		v.errorf(p+".hmacKeyFile", "hmacKeyFile is required for webhook alerts; set it to a file holding the key that signs each payload")
	case a.Type != AlertWebhook && a.Type != "" && a.HMACKeyFile != "":
		v.errorf(p+".hmacKeyFile", "hmacKeyFile is only used by webhook alerts; %s alerts are not signed, remove it", a.Type)
	}
	seen := map[string]int{}
	for i, e := range a.Events {
		ep := index(p+".events", i)
		if !slices.Contains(alertEvents, e) {
			v.errorf(ep, "%q is not an event; use %s (or list none for all)", e, strings.Join(alertEvents, ", "))
			continue
		}
		if first, dup := seen[e]; dup {
			v.errorf(ep, "%q is already listed at events[%d]; remove the repeat", e, first)
			continue
		}
		seen[e] = i
	}
}
