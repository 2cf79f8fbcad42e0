package alert

import (
	"fmt"
	"strings"
)

// Slack Block Kit limits (docs.slack.dev, "Blocks" and "Header block").
const (
	slackMaxBlocks        = 50
	slackHeaderMax        = 150  // header plain_text
	slackTextMax          = 3000 // section text, context element text
	slackSectionFieldsMax = 10
	slackFieldTextMax     = 2000
	// slackMessageBudget caps the text across all blocks. Slack documents no
	// total for incoming webhooks, but rejects messages of about 13,000
	// characters of blocks with msg_blocks_too_long (slackapi/bolt-js#2509),
	// so syncd stays below that.
	slackMessageBudget = 12000
	slackValueMax      = 500 // one desired or live value
)

// slackPayload is the body of a Slack incoming-webhook request: a plain
// fallback text for notifications and the blocks that are shown.
type slackPayload struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks"`
}

type slackBlock struct {
	Type     string      `json:"type"`
	Text     *slackText  `json:"text,omitempty"`
	Fields   []slackText `json:"fields,omitempty"`
	Elements []slackText `json:"elements,omitempty"`
}

type slackText struct {
	Type string `json:"type"` // "plain_text" or "mrkdwn"
	Text string `json:"text"`
}

// slackEscaper escapes the three characters Slack treats as markup, so that
// "<!channel>" in an object name cannot ping anyone.
var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func slackEscape(s string) string { return slackEscaper.Replace(s) }

func mrkdwn(s string) slackText { return slackText{Type: "mrkdwn", Text: s} }

// renderSlack builds the Slack message for m within Slack's limits.
func renderSlack(m message) ([]byte, error) {
	title := m.title()
	summary := m.summary()
	fallback := title
	if summary != "" {
		fallback += ": " + summary
	}
	p := slackPayload{Text: fit(fallback, slackTextMax, slackEscape)}
	used := 0
	add := func(b slackBlock, size int) {
		p.Blocks = append(p.Blocks, b)
		used += size
	}

	h := fit(title, slackHeaderMax, nil)
	add(slackBlock{Type: "header", Text: &slackText{Type: "plain_text", Text: h}}, utf16Len(h))
	if summary != "" {
		s := fit(summary, slackTextMax, slackEscape)
		add(slackBlock{Type: "section", Text: &slackText{Type: "mrkdwn", Text: s}}, utf16Len(s))
	}
	var facts []slackText
	size := 0
	for _, f := range m.facts() {
		if len(facts) == slackSectionFieldsMax {
			break
		}
		t := fit("*"+f.name+"*\n"+f.value, slackFieldTextMax, slackEscape)
		facts = append(facts, mrkdwn(t))
		size += utf16Len(t)
	}
	if len(facts) > 0 {
		add(slackBlock{Type: "section", Fields: facts}, size)
	}

	footer := mrkdwn(slackEscape(fmt.Sprintf("syncd alert %q · %s · fingerprint %s", m.sink, m.state(), m.fingerprint)))
	// Room kept for the footer and for a note about fields left out.
	reserve := 2 * 200
	shown := 0
	for _, f := range m.ev.Fields {
		t := slackFieldText(f)
		if len(p.Blocks) >= slackMaxBlocks-2 || used+utf16Len(t) > slackMessageBudget-reserve {
			break
		}
		add(slackBlock{Type: "section", Text: &slackText{Type: "mrkdwn", Text: t}}, utf16Len(t))
		shown++
	}
	if rest := len(m.ev.Fields) - shown; rest > 0 {
		add(slackBlock{Type: "context", Elements: []slackText{mrkdwn(fmt.Sprintf("…and %d more field(s) not shown", rest))}}, 0)
	}
	add(slackBlock{Type: "context", Elements: []slackText{footer}}, utf16Len(footer.Text))
	return marshal(p)
}

// slackFieldText is one field as a section's mrkdwn text.
func slackFieldText(f Field) string {
	var b strings.Builder
	if oneLine(f.Path) == "" {
		b.WriteString("*" + wholeObject + "*")
	} else {
		b.WriteString("*" + fitCode(f.Path, 300, slackEscape) + "*")
	}
	if f.Class != "" {
		b.WriteString(" — " + fit(oneLine(f.Class), 100, slackEscape))
	}
	b.WriteString("\nDesired: " + slackValue(f.Desired))
	b.WriteString("\nLive: " + slackValue(f.Live))
	if c := culpritText(f.Culprit); c != "" {
		b.WriteString("\nChanged by: " + fit(c, 400, slackEscape))
	}
	return fit(b.String(), slackTextMax, nil)
}

func slackValue(v string) string {
	if v == "" {
		return "_unset_"
	}
	return fitCode(v, slackValueMax, slackEscape)
}
