package alert

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The functions below render a payload as plain text the way its chat
// client lays it out (one line per text, facts as "name: value", a blank
// line where the client draws a separator, markup shown as plain text).
// They read the request body through the provider schemas of
// providers_test.go, not through the package's own types, so the
// rendering in docs/drift.md is what a reader sees of what was sent.

var (
	mdBold   = regexp.MustCompile(`\*([^*\n]+)\*`)
	mdCode   = regexp.MustCompile("`([^`\n]*)`")
	mdItalic = regexp.MustCompile(`(^|[\s:])_([^_\n]+)_`)
)

// plainMarkdown shows Slack mrkdwn or Discord Markdown as the reader sees
// it: bold, code and italic marks dropped, Slack's entities unescaped.
func plainMarkdown(s string) string {
	s = mdCode.ReplaceAllString(s, "$1")
	s = mdBold.ReplaceAllString(s, "$1")
	s = mdItalic.ReplaceAllString(s, "$1$2")
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}

func readSlack(t *testing.T, body []byte) string {
	var m slackMsgSchema
	decodeStrict(t, body, &m)
	var b strings.Builder
	b.WriteString("[notification] " + plainMarkdown(m.Text) + "\n")
	for _, bl := range m.Blocks {
		b.WriteString("\n")
		if bl.Type == "header" {
			b.WriteString(bl.Text.Text + "\n")
			continue
		}
		if bl.Text != nil {
			b.WriteString(plainMarkdown(bl.Text.Text) + "\n")
		}
		for _, f := range bl.Fields {
			name, value, _ := strings.Cut(f.Text, "\n")
			b.WriteString(plainMarkdown(name) + ": " + plainMarkdown(value) + "\n")
		}
		for _, e := range bl.Elements {
			b.WriteString(plainMarkdown(e.Text) + "\n")
		}
	}
	return b.String()
}

func readTeams(t *testing.T, body []byte) string {
	var m teamsMsgSchema
	decodeStrict(t, body, &m)
	var b strings.Builder
	for i, e := range m.Attachments[0].Content.Body {
		if i > 0 && e.Separator != nil && *e.Separator {
			b.WriteString("\n")
		}
		switch e.Type {
		case "TextBlock":
			b.WriteString(e.Text + "\n")
		case "FactSet":
			for _, f := range e.Facts {
				b.WriteString(f.Title + ": " + f.Value + "\n")
			}
		}
	}
	return b.String()
}

func readDiscord(t *testing.T, body []byte) string {
	var m discordMsgSchema
	decodeStrict(t, body, &m)
	var b strings.Builder
	for _, e := range m.Embeds {
		b.WriteString(e.Title + "\n")
		if e.Description != "" {
			b.WriteString(plainMarkdown(e.Description) + "\n")
		}
		inline := false
		for _, f := range e.Fields {
			switch {
			case f.Inline != nil && *f.Inline:
				if !inline {
					b.WriteString("\n")
				}
				b.WriteString(f.Name + ": " + plainMarkdown(f.Value) + "\n")
			default:
				b.WriteString("\n" + f.Name + "\n" + plainMarkdown(f.Value) + "\n")
			}
			inline = f.Inline != nil && *f.Inline
		}
		if e.Footer != nil {
			b.WriteString("\n" + e.Footer.Text)
			if e.Timestamp != "" {
				b.WriteString(" · " + e.Timestamp)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// readWebhook lays out the generic webhook's JSON as a receiver that
// shows every field would.
func readWebhook(t *testing.T, body []byte) string {
	var m webhookSchema
	decodeStrict(t, body, &m)
	var b strings.Builder
	o := m.Object
	b.WriteString(m.Type + " (" + m.State + "): " + o.APIVersion + " " + o.Kind + " " + o.Namespace + "/" + o.Name + " (app " + m.App + ")\n")
	b.WriteString(m.Summary + "\n")
	b.WriteString("revision " + m.Revision + " · " + m.Time.UTC().Format("2006-01-02T15:04:05Z07:00") + "\n")
	for _, f := range m.Fields {
		b.WriteString("\n" + f.Path + " — " + f.Class + "\n")
		b.WriteString("desired: " + f.Desired + "\nlive: " + f.Live + "\n")
		if c := f.Culprit; c != nil {
			how := c.Operation
			if c.Subresource != "" {
				how += ", subresource " + c.Subresource
			}
			b.WriteString("culprit: " + c.Manager + " (" + how + ")")
			if c.Time != nil {
				b.WriteString(" at " + c.Time.UTC().Format("2006-01-02T15:04:05Z07:00"))
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\nsink " + m.Sink + " · fingerprint " + m.Fingerprint + "\n")
	return b.String()
}

var readers = map[string]func(*testing.T, []byte) string{
	string(SinkSlack):   readSlack,
	string(SinkMSTeams): readTeams,
	string(SinkDiscord): readDiscord,
	string(SinkWebhook): readWebhook,
}

// TestDriftDocPayloads checks that docs/drift.md shows, for every sink
// type, the payload of the real drift finding (the golden files of
// TestGoldenPayloads) and how the open and resolved messages read, as the
// code produces them now, and that each rendering names the title, every
// field with its class, desired and live value, the culprits and the
// revision.
func TestDriftDocPayloads(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "drift.md"))
	if err != nil {
		t.Fatal(err)
	}
	ev := driftEvent()
	for _, typ := range []string{string(SinkSlack), string(SinkMSTeams), string(SinkDiscord), string(SinkWebhook)} {
		t.Run(typ, func(t *testing.T) {
			golden, err := os.ReadFile(filepath.Join("testdata", typ+"-open.json"))
			if err != nil {
				t.Fatal(err)
			}
			if block := "```json\n" + string(golden) + "```\n"; !strings.Contains(string(doc), block) {
				t.Errorf("docs/drift.md does not show testdata/%s-open.json as it is now; paste it again:\n%s", typ, block)
			}
			open := readers[typ](t, sendOne(t, typ, ev))
			wants := []string{"Deployment testreportexample-1/web", ev.Revision, "hpa-controller (Update, subresource scale)", "kubectl-edit (Update) at 2026-11-29T23:07:04Z"}
			for _, f := range ev.Fields {
				wants = append(wants, f.Path+" — "+f.Class, f.Desired, f.Live)
			}
			for _, w := range wants {
				if !strings.Contains(open, w) {
					t.Errorf("the %s message does not read %q:\n%s", typ, w, open)
				}
			}
			resolved := readers[typ](t, sendResolved(t, typ, resolvedDriftEvent()))
			for name, text := range map[string]string{"open": open, "resolved": resolved} {
				if block := "```\n" + text + "```\n"; !strings.Contains(string(doc), block) {
					t.Errorf("docs/drift.md does not show how the %s %s message reads; paste it again:\n%s", name, typ, block)
				}
			}
		})
	}
}
