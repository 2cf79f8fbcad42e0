package alert

import (
	"fmt"
)

// Microsoft Teams limits. A message posted to an incoming webhook or a
// Workflows webhook may be about 28 KB; syncd keeps the body well below
// that, since the service measures it after re-encoding.
const (
	teamsBodyBudget = 20000 // bytes of JSON for the card body elements
	teamsTextMax    = 2000
	teamsValueMax   = 400
)

// Adaptive Card identifiers used in the message.
const (
	adaptiveCardContentType = "application/vnd.microsoft.card.adaptive"
	adaptiveCardSchema      = "http://adaptivecards.io/schemas/adaptive-card.json"
	adaptiveCardVersion     = "1.4"
)

// teamsPayload is the message a Teams incoming webhook or a Workflows
// "when a Teams webhook request is received" flow accepts: one attachment
// holding an Adaptive Card.
type teamsPayload struct {
	Type        string            `json:"type"` // "message"
	Attachments []teamsAttachment `json:"attachments"`
}

type teamsAttachment struct {
	ContentType string    `json:"contentType"`
	ContentURL  *string   `json:"contentUrl"` // always null, as in Microsoft's example
	Content     teamsCard `json:"content"`
}

type teamsCard struct {
	Schema  string         `json:"$schema"`
	Type    string         `json:"type"` // "AdaptiveCard"
	Version string         `json:"version"`
	Body    []teamsElement `json:"body"`
}

// teamsElement is a TextBlock or a FactSet.
type teamsElement struct {
	Type      string      `json:"type"`
	Text      string      `json:"text,omitempty"`
	Size      string      `json:"size,omitempty"`
	Weight    string      `json:"weight,omitempty"`
	Color     string      `json:"color,omitempty"`
	IsSubtle  bool        `json:"isSubtle,omitempty"`
	Wrap      bool        `json:"wrap,omitempty"`
	Separator bool        `json:"separator,omitempty"`
	Facts     []teamsFact `json:"facts,omitempty"`
}

type teamsFact struct {
	Title string `json:"title"`
	Value string `json:"value"`
}

func textBlock(text string) teamsElement {
	return teamsElement{Type: "TextBlock", Text: text, Wrap: true}
}

// teamsColor is the TextBlock colour of the title.
func teamsColor(m message) string {
	if m.ev.Resolved {
		return "Good"
	}
	if isFinding(m.ev.Type) {
		return "Attention"
	}
	return "Accent"
}

// renderTeams builds the Teams message for m within the size budget.
func renderTeams(m message) ([]byte, error) {
	title := textBlock(fit(m.title(), teamsTextMax, nil))
	title.Size, title.Weight, title.Color = "Medium", "Bolder", teamsColor(m)
	body := []teamsElement{title}
	if s := m.summary(); s != "" {
		body = append(body, textBlock(fit(s, teamsTextMax, nil)))
	}
	var facts []teamsFact
	for _, f := range m.facts() {
		facts = append(facts, teamsFact{Title: f.name, Value: fit(f.value, teamsValueMax, nil)})
	}
	body = append(body, teamsElement{Type: "FactSet", Facts: facts})

	footer := textBlock(fmt.Sprintf("syncd alert %q · %s · fingerprint %s", m.sink, m.state(), m.fingerprint))
	footer.Size, footer.IsSubtle, footer.Separator = "Small", true, true

	used := 0
	for _, e := range append(body, footer) {
		used += jsonSize(e)
	}
	const reserve = 200 // for the note about fields left out
	shown := 0
	for _, f := range m.ev.Fields {
		els := teamsField(f)
		size := jsonSize(els[0]) + jsonSize(els[1])
		if used+size > teamsBodyBudget-reserve {
			break
		}
		body = append(body, els[:]...)
		used += size
		shown++
	}
	if rest := len(m.ev.Fields) - shown; rest > 0 {
		note := textBlock(fmt.Sprintf("…and %d more field(s) not shown", rest))
		note.IsSubtle = true
		body = append(body, note)
	}
	body = append(body, footer)

	return marshal(teamsPayload{
		Type: "message",
		Attachments: []teamsAttachment{{
			ContentType: adaptiveCardContentType,
			Content: teamsCard{
				Schema:  adaptiveCardSchema,
				Type:    "AdaptiveCard",
				Version: adaptiveCardVersion,
				Body:    body,
			},
		}},
	})
}

// teamsField is one field: a bold heading and a FactSet of its values.
func teamsField(f Field) [2]teamsElement {
	head := fit(fieldHeading(f), 300, nil)
	if f.Class != "" {
		head += " — " + fit(oneLine(f.Class), 100, nil)
	}
	h := textBlock(head)
	h.Weight, h.Separator = "Bolder", true
	facts := []teamsFact{
		{Title: "Desired", Value: fit(oneLine(valueText(f.Desired)), teamsValueMax, nil)},
		{Title: "Live", Value: fit(oneLine(valueText(f.Live)), teamsValueMax, nil)},
	}
	if c := culpritText(f.Culprit); c != "" {
		facts = append(facts, teamsFact{Title: "Changed by", Value: fit(c, teamsValueMax, nil)})
	}
	return [2]teamsElement{h, {Type: "FactSet", Facts: facts}}
}

// jsonSize is the encoded size of v; the types encoded here cannot fail.
func jsonSize(v any) int {
	b, _ := marshal(v)
	return len(b)
}
