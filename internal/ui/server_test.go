package ui

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"
)

// mapLine is what a test reads of one line of an ownership map.
type mapLine struct {
	Owners  []string
	Classes string
	Text    string
}

// ownerMapLines parses an Object page's ownership map: its lines by path.
func ownerMapLines(t *testing.T, body string) map[string]mapLine {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]mapLine{}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && attr(n, "data-path") != "" {
			l := mapLine{Classes: attr(n, "class"), Text: text(n)}
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.ElementNode && attr(c, "class") == "owners" {
					for o := c.FirstChild; o != nil; o = o.NextSibling {
						l.Owners = append(l.Owners, attr(o, "title"))
					}
				}
			}
			out[attr(n, "data-path")] = l
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// TestPages serves every page over the real API server's objects: the
// ownership map names the right manager(s) of each field, marks the
// fields Git declares, the shared label and the drifted image with its
// culprit, and no page shows the Secret's value.
func TestPages(t *testing.T) {
	f := newFixture(t)
	app := AppRef{Name: f.app.Name}
	pages := map[string]string{
		"apps":       "/",
		"app":        appURLOf(app),
		"deployment": "/object?" + objectQuery(app, f.deployment()),
		"secret":     "/object?" + objectQuery(app, f.secret()),
		"drift":      "/drift",
		"plan":       "/plan?" + appQuery(app).Encode(),
	}
	bodies := map[string]string{}
	for name, path := range pages {
		code, body, _ := f.get(t, path)
		if code != http.StatusOK {
			t.Fatalf("%s (%s): status %d:\n%s", name, path, code, body)
		}
		bodies[name] = body
	}
	for name, body := range bodies {
		for _, v := range []string{secretValue, base64.StdEncoding.EncodeToString([]byte(secretValue))} {
			if strings.Contains(body, v) {
				t.Errorf("page %s shows the Secret's value %q", name, v)
			}
		}
	}
	for _, want := range []string{"<h1>Plan of", `<pre class="plan">app ` + f.app.Name + ": revision", "Deployment " + f.ns + "/web: "} {
		if !strings.Contains(bodies["plan"], want) {
			t.Errorf("the Plan page does not show %q:\n%s", want, bodies["plan"])
		}
	}
	if !strings.Contains(bodies["app"], `href="/plan?app=`+f.app.Name+`"`) {
		t.Errorf("the App page does not link its Plan page:\n%s", bodies["app"])
	}
	for _, want := range []string{">" + f.app.Name + "</a>", ">shop</a>", "4f2c9a1e7d3b", `class="ready-True"`} {
		if !strings.Contains(bodies["apps"], want) {
			t.Errorf("the Apps page does not show %q:\n%s", want, bodies["apps"])
		}
	}
	if !strings.Contains(bodies["app"], `href="/object?`) || !strings.Contains(bodies["app"], ">web</a>") {
		t.Errorf("the App page does not link the Deployment:\n%s", bodies["app"])
	}
	checkAppPage(t, "the file app", bodies["app"], appPageWant{
		rows: map[string][]string{
			// The Deployment's last apply handed a field off: the
			// inventory records it for the next sync to check again.
			"web":      {"namespaced", "Deployment.apps", f.ns, "web", "InProgress", "apply pending"},
			"settings": {"namespaced", "ConfigMap", f.ns, "settings", "Current", "applied"},
		},
		managers: map[string][]string{
			"web":      {"syncd-" + f.app.Name + "-handoff", "team-b", "syncd-" + f.app.Name, "autoscaler (Update, scale)", "kubectl-edit (Update)"},
			"settings": {"syncd-" + f.app.Name},
		},
		handoffs: [][]string{{"apps/Deployment " + f.ns + "/web", "syncd-" + f.app.Name, ".spec.revisionHistoryLimit"}},
		// The second apply handed a field off, which the server
		// wrote: a line of its own, as its Synced Event counts it.
		history: []string{"applied", "applied"},
		last:    []string{"applied", "0 created, 0 configured, 1 handed off"},
	})
	code, shop, _ := f.get(t, appURLOf(AppRef{Namespace: f.ns, Name: "shop"}))
	if code != http.StatusOK {
		t.Fatalf("the App shop's page: %d\n%s", code, shop)
	}
	checkAppPage(t, "the App shop", shop, appPageWant{
		handoffs: [][]string{{"apps/Deployment " + f.ns + "/web", "syncd-shop", ".spec.replicas"}},
		last:     []string{"ReconciliationSucceeded", "3 of 7 changed, 1 held back by conflicts, 0 failed", "prune refused: 1 object would go (budget)"},
	})

	checkFeed(t, bodies["drift"], map[string][]string{
		"the image kubectl-edit took": {f.app.Name, "apps/Deployment " + f.ns + "/web", `.spec.template.spec.containers[name="web"].image`, "taken-over", "nginx:1.27", "nginx:1.28-hotfix"},
		"the replicas":                {f.app.Name, "apps/Deployment " + f.ns + "/web", ".spec.replicas", "taken-over", "2", "5"},
		"the App's count":             {f.ns + "/shop", "2 fields differ from revision main@sha1:4f2c9a1e7d3b"},
	})

	withStatus := f.opts
	withStatus.FileStatus = fileStatuses{f.app.Name: {Ready: "False", Message: "last reconcile: conflicts", Drift: 3, Conflicts: 1}}
	checkFileRow(t, f, withStatus, []string{f.app.Name, "syncd.yaml", "local", "syncd.yaml", "—", "False", "3", "3", "1", "0", "—"})
	checkFileRow(t, f, f.opts, []string{f.app.Name, "syncd.yaml", "local", "syncd.yaml", "—", "True", "3", "—", "—", "—", "—"})
	withSource := f.opts
	withSource.FileSource = func(app string) (string, bool) { return "repo1", app == f.app.Name }
	checkFileRow(t, f, withSource, []string{f.app.Name, "syncd.yaml", "local", "repo1 (syncd.yaml)", "—", "True", "3", "—", "—", "—", "—"})

	lines := ownerMapLines(t, bodies["deployment"])
	syncd := "syncd-" + f.app.Name + " (Apply)"
	tests := map[string]struct {
		path       string
		wantOwners []string
		wantClass  []string
		wantText   []string
	}{
		"a field only syncd owns":      {path: ".spec.selector.matchLabels.app", wantOwners: []string{syncd}, wantClass: []string{"declared"}},
		"the label team-b applies too": {path: ".metadata.labels.team", wantOwners: []string{syncd, "team-b (Apply)"}, wantClass: []string{"declared", "shared"}},
		"the image kubectl-edit took": {path: `.spec.template.spec.containers[name="web"].image`, wantOwners: []string{"kubectl-edit (Update)"}, wantClass: []string{"drifted"},
			wantText: []string{"nginx:1.28-hotfix", "taken-over", "kubectl-edit (Update"}},
		"the replicas the autoscaler set": {path: ".spec.replicas", wantOwners: []string{"autoscaler (Update /scale)"}, wantClass: []string{"drifted"}, wantText: []string{"5", "autoscaler"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			l, ok := lines[tc.path]
			if !ok {
				t.Fatalf("no line for %s; lines: %v", tc.path, keys(lines))
			}
			if diff := cmp.Diff(tc.wantOwners, l.Owners); diff != "" {
				t.Errorf("owners of %s (-want +got):\n%s", tc.path, diff)
			}
			for _, c := range tc.wantClass {
				if !strings.Contains(" "+l.Classes+" ", " "+c+" ") {
					t.Errorf("line %s has classes %q, want %s", tc.path, l.Classes, c)
				}
			}
			for _, s := range tc.wantText {
				if !strings.Contains(l.Text, s) {
					t.Errorf("line %s reads %q, want %q in it", tc.path, l.Text, s)
				}
			}
		})
	}
	secret := ownerMapLines(t, bodies["secret"])
	if l := secret[".data.password"]; !strings.Contains(l.Text, "<redacted>") || !strings.Contains(l.Classes, "redacted") {
		t.Errorf("the Secret's password line is %+v, want it redacted", l)
	}
}

// appPageWant is what an App page must show: object rows by name (their
// cells but the last) and their managers, pending handoffs'
// cells, the history's results newest first, and texts of the last
// reconcile.
type appPageWant struct {
	rows     map[string][]string
	managers map[string][]string
	handoffs [][]string
	history  []string
	last     []string
}

func checkAppPage(t *testing.T, name, body string, want appPageWant) {
	t.Helper()
	tables := pageTables(t, body)
	objects := map[string][]string{}
	for _, row := range tables["objects"] {
		objects[row[3]] = row
	}
	for obj, cells := range want.rows {
		got := objects[obj]
		if len(got) != 7 {
			t.Errorf("%s: object %s's row is %q, want 7 cells", name, obj, got)
			continue
		}
		if diff := cmp.Diff(strings.Join(want.managers[obj], ", "), got[6]); diff != "" {
			t.Errorf("%s: object %s's managers (-want +got):\n%s", name, obj, diff)
		}
		got = got[:6]
		if diff := cmp.Diff(cells, got); diff != "" {
			t.Errorf("%s: object %s's row (-want +got):\n%s", name, obj, diff)
		}
	}
	if diff := cmp.Diff(want.handoffs, tables["handoffs"]); diff != "" {
		t.Errorf("%s: pending handoffs (-want +got):\n%s", name, diff)
	}
	var results []string
	for _, row := range tables["history"] {
		results = append(results, row[2])
	}
	if diff := cmp.Diff(want.history, results); diff != "" {
		t.Errorf("%s: history's results (-want +got):\n%s", name, diff)
	}
	last := sectionText(t, body, "Last reconcile")
	for _, s := range want.last {
		if !strings.Contains(last, s) {
			t.Errorf("%s: the last reconcile reads %q, want %q in it", name, last, s)
		}
	}
}

// fileStatuses is a daemon's status of its file apps.
type fileStatuses map[string]FileAppStatus

func (s fileStatuses) FileStatus() map[string]FileAppStatus { return s }

// checkFileRow checks the file app's row of the Apps page (its cells but
// the last sync) of a UI with opts: from its last recorded apply, or from
// its daemon's status when opts has one.
func checkFileRow(t *testing.T, f *fixture, opts Options, want []string) {
	t.Helper()
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/", nil))
	for _, row := range pageTables(t, rec.Body.String())["apps"] {
		if row[0] == f.app.Name {
			if diff := cmp.Diff(want, row[:len(row)-1]); diff != "" {
				t.Errorf("the file app's row (FileStatus %v) (-want +got):\n%s", opts.FileStatus != nil, diff)
			}
			return
		}
	}
	t.Errorf("the Apps page has no row of %s", f.app.Name)
}

// checkFeed checks that the drift feed has the wanted rows (their cells
// after the time, the culprit's left out), each linked to its app (and a
// finding to its object), newest first.
func checkFeed(t *testing.T, body string, want map[string][]string) {
	t.Helper()
	rows := pageTables(t, body)["feed"]
	var got [][]string
	var times []string
	for _, row := range rows {
		if row[0] != "—" {
			times = append(times, row[0])
		}
		cells := row[1:]
		if len(cells) == 7 {
			cells = cells[:6]
		}
		got = append(got, cells)
	}
	for name, cells := range want {
		if !slices.ContainsFunc(got, func(g []string) bool { return slices.Equal(g, cells) }) {
			t.Errorf("the drift feed has no row for %s %q; its rows:\n%q", name, cells, got)
		}
	}
	if !slices.IsSortedFunc(times, func(a, b string) int { return strings.Compare(b, a) }) {
		t.Errorf("the drift feed is not newest first: %q", times)
	}
	for _, link := range []string{`href="/object?`, `href="/app?`} {
		if !strings.Contains(body, link) {
			t.Errorf("the drift feed has no %s link", link)
		}
	}
}

// pageTables returns the body rows' cell texts of each table of a page,
// by the table's class.
func pageTables(t *testing.T, body string) map[string][][]string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][][]string{}
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode || n.Data != "table" {
			continue
		}
		class := attr(n, "class")
		for tr := range n.Descendants() {
			if tr.Type != html.ElementNode || tr.Data != "tr" || tr.Parent.Data != "tbody" {
				continue
			}
			var cells []string
			for td := tr.FirstChild; td != nil; td = td.NextSibling {
				if td.Type == html.ElementNode && td.Data == "td" {
					cells = append(cells, strings.TrimSpace(text(td)))
				}
			}
			if len(cells) > 1 {
				out[class] = append(out[class], cells)
			}
		}
	}
	return out
}

// sectionText is the text of the page's section labelled label.
func sectionText(t *testing.T, body, label string) string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for n := range doc.Descendants() {
		if n.Type == html.ElementNode && n.Data == "section" && attr(n, "aria-label") == label {
			return text(n)
		}
	}
	return ""
}

func appURLOf(app AppRef) string { return "/app?" + appQuery(app).Encode() }

func keys(m map[string]mapLine) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestGuard: the UI refuses a Host that is not its own (DNS rebinding)
// and any method but GET and HEAD, and every response carries the
// security headers.
func TestGuard(t *testing.T) {
	s := &Server{opts: Options{Hosts: []string{"127.0.0.2"}}}
	h := s.guard(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	tests := map[string]struct {
		method, host string
		want         int
	}{
		"loopback IP":           {method: http.MethodGet, host: "127.0.0.1:7480", want: http.StatusOK},
		"localhost":             {method: http.MethodGet, host: "localhost:7480", want: http.StatusOK},
		"IPv6 loopback":         {method: http.MethodGet, host: "[::1]:7480", want: http.StatusOK},
		"the configured host":   {method: http.MethodGet, host: "127.0.0.2:9000", want: http.StatusOK},
		"a rebinding host name": {method: http.MethodGet, host: "evil.example:7480", want: http.StatusMisdirectedRequest},
		"a POST":                {method: http.MethodPost, host: "127.0.0.1:7480", want: http.StatusMethodNotAllowed},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			req, err := http.NewRequest(tc.method, "http://"+tc.host+"/", nil)
			if err != nil {
				t.Fatal(err)
			}
			h.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Errorf("status %d, want %d", rec.Code, tc.want)
			}
			if got := rec.Header().Get("Content-Security-Policy"); got != contentSecurityPolicy {
				t.Errorf("Content-Security-Policy %q, want %q", got, contentSecurityPolicy)
			}
			if got := rec.Header().Get("X-Frame-Options"); got != "DENY" {
				t.Errorf("X-Frame-Options %q, want DENY", got)
			}
		})
	}
}
