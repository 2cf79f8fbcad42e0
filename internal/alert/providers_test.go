package alert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
)

// The structs below mirror each provider's documented request schema,
// independently of the types the package encodes with. Payloads are
// decoded with DisallowUnknownFields, so a field the provider does not
// document fails the test.

// Slack: docs.slack.dev "Sending messages using incoming webhooks" and the
// Block Kit reference (header, section, context blocks; text objects).
type slackMsgSchema struct {
	Text   string             `json:"text"`
	Blocks []slackBlockSchema `json:"blocks"`
}

type slackBlockSchema struct {
	Type     string            `json:"type"`
	BlockID  string            `json:"block_id"`
	Text     *slackTextSchema  `json:"text"`
	Fields   []slackTextSchema `json:"fields"`
	Elements []slackTextSchema `json:"elements"`
}

type slackTextSchema struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Emoji    *bool  `json:"emoji"`
	Verbatim *bool  `json:"verbatim"`
}

// Teams: learn.microsoft.com "Create and send messages" (incoming webhook
// with an Adaptive Card) and the Adaptive Cards schema (TextBlock,
// FactSet).
type teamsMsgSchema struct {
	Type        string `json:"type"`
	Attachments []struct {
		ContentType string     `json:"contentType"`
		ContentURL  *string    `json:"contentUrl"`
		Content     cardSchema `json:"content"`
	} `json:"attachments"`
}

type cardSchema struct {
	Schema  string          `json:"$schema"`
	Type    string          `json:"type"`
	Version string          `json:"version"`
	Body    []elementSchema `json:"body"`
}

type elementSchema struct {
	Type      string `json:"type"`
	Text      string `json:"text"`
	Size      string `json:"size"`
	Weight    string `json:"weight"`
	Color     string `json:"color"`
	IsSubtle  *bool  `json:"isSubtle"`
	Wrap      *bool  `json:"wrap"`
	Separator *bool  `json:"separator"`
	Facts     []struct {
		Title string `json:"title"`
		Value string `json:"value"`
	} `json:"facts"`
}

// Discord: discord.com/developers "Execute Webhook" and "Embed Object",
// "Embed Limits", "Allowed Mentions Object".
type discordMsgSchema struct {
	Content         *string `json:"content"`
	AllowedMentions *struct {
		Parse []string `json:"parse"`
	} `json:"allowed_mentions"`
	Embeds []struct {
		Title       string `json:"title"`
		Description string `json:"description"`
		Color       *int   `json:"color"`
		Timestamp   string `json:"timestamp"`
		Fields      []struct {
			Name   string `json:"name"`
			Value  string `json:"value"`
			Inline *bool  `json:"inline"`
		} `json:"fields"`
		Footer *struct {
			Text string `json:"text"`
		} `json:"footer"`
	} `json:"embeds"`
}

// Generic webhook: the schema documented in docs/alerts.md.
type webhookSchema struct {
	Version     string `json:"version"`
	Sink        string `json:"sink"`
	Type        string `json:"type"`
	State       string `json:"state"`
	Fingerprint string `json:"fingerprint"`
	App         string `json:"app"`
	Revision    string `json:"revision"`
	Object      struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Namespace  string `json:"namespace"`
		Name       string `json:"name"`
	} `json:"object"`
	Summary       string               `json:"summary"`
	Fields        []webhookFieldSchema `json:"fields"`
	FieldsOmitted int                  `json:"fieldsOmitted"`
	Time          time.Time            `json:"time"`
}

type webhookFieldSchema struct {
	Path      string                `json:"path"`
	Class     string                `json:"class"`
	Desired   string                `json:"desired"`
	Live      string                `json:"live"`
	Sensitive bool                  `json:"sensitive"`
	Culprit   *webhookCulpritSchema `json:"culprit"`
}

type webhookCulpritSchema struct {
	Manager     string     `json:"manager"`
	Operation   string     `json:"operation"`
	Subresource string     `json:"subresource"`
	Time        *time.Time `json:"time"`
}

func decodeStrict(t *testing.T, body []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("payload does not match the documented schema: %v\n%s", err, body)
	}
}

// chars counts like the providers do: UTF-16 code units.
func chars(s string) int { return len(utf16.Encode([]rune(s))) }

// checkSlack checks body against Slack's documented shape and limits and
// returns all its text.
func checkSlack(t *testing.T, body []byte) string {
	var m slackMsgSchema
	decodeStrict(t, body, &m)
	var all []string
	problem := func(format string, args ...any) { t.Errorf("slack: "+format, args...) }
	if m.Text == "" {
		problem("text (the notification fallback) is empty")
	}
	if strings.ContainsAny(m.Text, "<>") {
		problem("text has unescaped < or >: %q", m.Text)
	}
	all = append(all, m.Text)
	if n := len(m.Blocks); n == 0 || n > 50 {
		problem("%d blocks, want 1..50", n)
	}
	total := 0
	checkText := func(where string, tx slackTextSchema, max int, types ...string) {
		if !slices.Contains(types, tx.Type) {
			problem("%s: text type %q, want one of %v", where, tx.Type, types)
		}
		if tx.Text == "" || chars(tx.Text) > max {
			problem("%s: text has %d characters, want 1..%d", where, chars(tx.Text), max)
		}
		if tx.Type == "mrkdwn" && strings.ContainsAny(tx.Text, "<>") {
			problem("%s: mrkdwn text has unescaped < or >: %q", where, tx.Text)
		}
		total += chars(tx.Text)
		all = append(all, tx.Text)
	}
	for i, b := range m.Blocks {
		where := fmt.Sprintf("blocks[%d] (%s)", i, b.Type)
		switch b.Type {
		case "header":
			if b.Text == nil || b.Fields != nil || b.Elements != nil {
				problem("%s: a header has exactly a text", where)
				continue
			}
			checkText(where, *b.Text, 150, "plain_text")
		case "section":
			if b.Text == nil && len(b.Fields) == 0 || b.Elements != nil {
				problem("%s: a section has a text or fields and no elements", where)
			}
			if b.Text != nil {
				checkText(where, *b.Text, 3000, "plain_text", "mrkdwn")
			}
			if len(b.Fields) > 10 {
				problem("%s: %d fields, want at most 10", where, len(b.Fields))
			}
			for _, f := range b.Fields {
				checkText(where+" field", f, 2000, "plain_text", "mrkdwn")
			}
		case "context":
			if n := len(b.Elements); n == 0 || n > 10 || b.Text != nil || b.Fields != nil {
				problem("%s: a context has 1..10 elements and nothing else", where)
			}
			for _, e := range b.Elements {
				checkText(where+" element", e, 3000, "plain_text", "mrkdwn")
			}
		default:
			problem("%s: unexpected block type", where)
		}
	}
	// Slack rejects messages with about 13,000 characters of blocks
	// (slackapi/bolt-js#2509).
	if total > 13000 {
		problem("blocks hold %d characters, Slack rejects about 13000", total)
	}
	return strings.Join(all, "\n")
}

func checkTeams(t *testing.T, body []byte) string {
	var m teamsMsgSchema
	decodeStrict(t, body, &m)
	problem := func(format string, args ...any) { t.Errorf("msteams: "+format, args...) }
	if len(body) > 28*1024 {
		problem("body is %d bytes, Teams accepts about 28 KB", len(body))
	}
	if m.Type != "message" {
		problem("type %q, want message", m.Type)
	}
	if len(m.Attachments) != 1 {
		problem("%d attachments, want 1", len(m.Attachments))
		return ""
	}
	a := m.Attachments[0]
	if a.ContentType != "application/vnd.microsoft.card.adaptive" {
		problem("contentType %q", a.ContentType)
	}
	c := a.Content
	if c.Schema != "http://adaptivecards.io/schemas/adaptive-card.json" || c.Type != "AdaptiveCard" || c.Version != "1.4" {
		problem("card header $schema=%q type=%q version=%q", c.Schema, c.Type, c.Version)
	}
	if len(c.Body) == 0 {
		problem("card body is empty")
	}
	enum := func(where, v string, allowed ...string) {
		if v != "" && !slices.Contains(allowed, v) {
			problem("%s: %q is not one of %v", where, v, allowed)
		}
	}
	var all []string
	for i, e := range c.Body {
		where := fmt.Sprintf("body[%d] (%s)", i, e.Type)
		switch e.Type {
		case "TextBlock":
			if e.Text == "" || e.Facts != nil {
				problem("%s: a TextBlock has a text and no facts", where)
			}
			enum(where+" size", e.Size, "Small", "Default", "Medium", "Large", "ExtraLarge")
			enum(where+" weight", e.Weight, "Lighter", "Default", "Bolder")
			enum(where+" color", e.Color, "Default", "Dark", "Light", "Accent", "Good", "Warning", "Attention")
			all = append(all, e.Text)
		case "FactSet":
			if len(e.Facts) == 0 || e.Text != "" {
				problem("%s: a FactSet has facts and no text", where)
			}
			for _, f := range e.Facts {
				if f.Title == "" || f.Value == "" {
					problem("%s: fact %+v has an empty title or value", where, f)
				}
				all = append(all, f.Title+": "+f.Value)
			}
		default:
			problem("%s: unexpected element type", where)
		}
	}
	return strings.Join(all, "\n")
}

func checkDiscord(t *testing.T, body []byte) string {
	var m discordMsgSchema
	decodeStrict(t, body, &m)
	problem := func(format string, args ...any) { t.Errorf("discord: "+format, args...) }
	if m.AllowedMentions == nil || m.AllowedMentions.Parse == nil || len(m.AllowedMentions.Parse) != 0 {
		problem("allowed_mentions.parse must be present and empty so nobody is pinged")
	}
	if (m.Content == nil || *m.Content == "") && len(m.Embeds) == 0 {
		problem("neither content nor embeds")
	}
	if m.Content != nil && chars(*m.Content) > 2000 {
		problem("content has %d characters, max 2000", chars(*m.Content))
	}
	if len(m.Embeds) > 10 {
		problem("%d embeds, max 10", len(m.Embeds))
	}
	var all []string
	total := 0
	for i, e := range m.Embeds {
		limit := func(what, s string, min, max int) {
			if n := chars(s); n < min || n > max {
				problem("embeds[%d] %s has %d characters, want %d..%d", i, what, n, min, max)
			}
			total += chars(s)
			all = append(all, s)
		}
		limit("title", e.Title, 0, 256)
		limit("description", e.Description, 0, 4096)
		if e.Color != nil && (*e.Color < 0 || *e.Color > 0xFFFFFF) {
			problem("embeds[%d] color %d out of range", i, *e.Color)
		}
		if e.Timestamp != "" {
			if _, err := time.Parse(time.RFC3339, e.Timestamp); err != nil {
				problem("embeds[%d] timestamp: %v", i, err)
			}
		}
		if len(e.Fields) > 25 {
			problem("embeds[%d] has %d fields, max 25", i, len(e.Fields))
		}
		for j, f := range e.Fields {
			limit(fmt.Sprintf("fields[%d].name", j), f.Name, 1, 256)
			limit(fmt.Sprintf("fields[%d].value", j), f.Value, 1, 1024)
		}
		if e.Footer != nil {
			limit("footer.text", e.Footer.Text, 1, 2048)
		}
	}
	if total > 6000 {
		problem("embeds hold %d characters, max 6000", total)
	}
	return strings.Join(all, "\n")
}

func checkWebhook(t *testing.T, body []byte) string {
	var m webhookSchema
	decodeStrict(t, body, &m)
	problem := func(format string, args ...any) { t.Errorf("webhook: "+format, args...) }
	if m.Version != "syncd.dev/alert/v1" {
		problem("version %q", m.Version)
	}
	if m.Sink == "" || m.Type == "" || m.Fingerprint == "" || m.Time.IsZero() {
		problem("sink, type, fingerprint and time are required: %+v", m)
	}
	if m.State != "open" && m.State != "resolved" {
		problem("state %q", m.State)
	}
	if m.Fields == nil {
		problem("fields is null, want a list")
	}
	if len(m.Fields) > 100 || len(body) > 1<<20 {
		problem("%d fields in %d bytes, want at most 100 fields and 1 MiB", len(m.Fields), len(body))
	}
	for what, text := range map[string]string{"app": m.App, "revision": m.Revision, "summary": m.Summary,
		"object.apiVersion": m.Object.APIVersion, "object.kind": m.Object.Kind, "object.namespace": m.Object.Namespace, "object.name": m.Object.Name} {
		if chars(text) > 2048 {
			problem("%s has %d characters, want at most 2048", what, chars(text))
		}
	}
	for _, f := range m.Fields {
		if chars(f.Desired) > 2048 || chars(f.Live) > 2048 || chars(f.Path) > 2048 {
			problem("field %.40q has a text over 2048 characters", f.Path)
		}
	}
	return string(body)
}

var checkers = map[string]func(*testing.T, []byte) string{
	string(SinkSlack):   checkSlack,
	string(SinkMSTeams): checkTeams,
	string(SinkDiscord): checkDiscord,
	string(SinkWebhook): checkWebhook,
}

// hugeEvent exceeds every provider limit: long names, many fields, long
// multi-byte values with markup characters.
func hugeEvent() Event {
	long := func(n int) string { return strings.Repeat("<ä😀&>", n) }
	ev := Event{
		Type:     EventConflict,
		App:      "app-" + strings.Repeat("x", 300),
		Revision: strings.Repeat("f", 400),
		Object:   ObjectRef{APIVersion: "example.com/v1", Kind: "Widget", Namespace: "ns-" + long(40), Name: "name-" + long(600)},
		Summary:  long(5000),
		Time:     t0,
	}
	for i := range 500 {
		ev.Fields = append(ev.Fields, Field{
			Path:    fmt.Sprintf(".spec.items[%d].%s", i, long(100)),
			Class:   "conflict-" + long(30),
			Desired: long(4000),
			Live:    long(4000),
			Culprit: Culprit{Manager: "mgr-" + long(100), Operation: "Apply", Time: t0},
		})
	}
	return ev
}

// manyFields is a drift with n short fields.
func manyFields(n int) Event {
	ev := driftEvent()
	ev.Fields = nil
	for i := range n {
		ev.Fields = append(ev.Fields, Field{Path: fmt.Sprintf(".data.k%d", i), Class: "value-drift", Desired: "a", Live: "b"})
	}
	return ev
}

// sendOne sends ev through a Notifier with one sink of type typ and
// returns the body the loopback server received.
func sendOne(t *testing.T, typ string, ev Event) []byte {
	t.Helper()
	rec := newRecorder(t)
	n := mustNew(t, []Sink{testAlert(t, "team-"+typ, SinkType(typ), rec.URL+secretURLPath)}, testOptions(newFakeClock()))
	n.Notify(ev)
	closeNotifier(t, n)
	reqs := rec.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d requests, want 1", len(reqs))
	}
	if got := reqs[0].Header.Get("Content-Type"); got != "application/json; charset=utf-8" {
		t.Errorf("Content-Type %q", got)
	}
	if reqs[0].Path != secretURLPath {
		t.Errorf("request went to %q, want the URL file's path", reqs[0].Path)
	}
	return reqs[0].Body
}

func TestPayloadShapes(t *testing.T) {
	resolved := driftEvent()
	resolved.Resolved = true
	sync := Event{Type: EventSync, App: "shop", Revision: "v1.2.0@sha1:abc", Summary: "applied 12 objects", Time: t0}
	evil := driftEvent()
	evil.Object.Name = "<!channel> @everyone"
	evil.Summary = "<!here> *bold* `code` @here <@123>"

	type want struct {
		contains    []string // in the text a reader sees
		notContains []string
	}
	tests := map[string]struct {
		ev    Event
		want  want
		types []string // default: all
	}{
		"drift names app, object, fields, values, culprit, revision": {
			ev: driftEvent(),
			want: want{contains: []string{
				"web", "Deployment", "testreportexample-1/web", ".spec.replicas", "taken-over", "2", "5",
				"hpa-controller", "Update", "scale", "kubectl-edit", "example.com/web:v1.5-hotfix",
				driftRevision, "2 field(s) of Deployment testreportexample-1/web drifted from Git",
			}},
		},
		"resolved is labelled resolved": {
			ev:   resolved,
			want: want{contains: []string{"esolved", ".spec.replicas"}},
		},
		"app-wide sync has no object": {
			ev:   sync,
			want: want{contains: []string{"Synced", "app shop", "applied 12 objects", "v1.2.0@sha1:abc"}},
		},
		"huge event is cut to the limits": {
			ev:   hugeEvent(),
			want: want{contains: []string{"more field(s) not shown"}},
		},
		"many short fields are capped by count": {
			ev:    manyFields(80),
			want:  want{contains: []string{"more field(s) not shown"}},
			types: []string{string(SinkSlack), string(SinkDiscord)},
		},
		"markup in names cannot ping in slack": {
			ev:    evil,
			want:  want{contains: []string{"&lt;!channel&gt;", "&lt;!here&gt;"}},
			types: []string{string(SinkSlack)},
		},
	}
	for name, tc := range tests {
		types := tc.types
		if types == nil {
			types = []string{string(SinkSlack), string(SinkMSTeams), string(SinkDiscord), string(SinkWebhook)}
		}
		for _, typ := range types {
			t.Run(name+"/"+typ, func(t *testing.T) {
				// Resolved events are only sent for alerted findings, so
				// the open one goes first through the same Notifier.
				ev := tc.ev
				var body []byte
				if ev.Resolved {
					body = sendResolved(t, typ, ev)
				} else {
					body = sendOne(t, typ, ev)
				}
				text := checkers[typ](t, body)
				// The webhook's content is compared field by field in
				// TestWebhookPayload; here only its shape is checked.
				for _, s := range tc.want.contains {
					if typ == string(SinkWebhook) {
						if !strings.Contains(text, `"fieldsOmitted":400`) && tc.ev.Type == EventConflict {
							t.Errorf("webhook payload does not count the 400 fields left out")
						}
						break
					}
					if !strings.Contains(text, s) {
						t.Errorf("%s payload does not contain %q:\n%s", typ, s, body)
					}
				}
				for _, s := range tc.want.notContains {
					if strings.Contains(string(body), s) {
						t.Errorf("%s payload contains %q:\n%s", typ, s, body)
					}
				}
			})
		}
	}
}

// sendResolved sends the open form of ev and then ev, and returns the
// body of the second request.
func sendResolved(t *testing.T, typ string, ev Event) []byte {
	t.Helper()
	rec := newRecorder(t)
	n := mustNew(t, []Sink{testAlert(t, "team-"+typ, SinkType(typ), rec.URL)}, testOptions(newFakeClock()))
	open := ev
	open.Resolved = false
	n.Notify(open)
	n.Notify(ev)
	closeNotifier(t, n)
	reqs := rec.Requests()
	if len(reqs) != 2 {
		t.Fatalf("server got %d requests, want 2 (open, resolved)", len(reqs))
	}
	return reqs[1].Body
}
