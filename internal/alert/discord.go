package alert

import (
	"fmt"
	"strings"
)

// Discord embed limits (discord.com/developers, "Embed Limits"), counted
// in characters across title, description, field names and values, footer
// text and author name.
const (
	discordTitleMax       = 256
	discordDescriptionMax = 4096
	discordFieldsMax      = 25
	discordFieldNameMax   = 256
	discordFieldValueMax  = 1024
	discordFooterMax      = 2048
	discordTotalMax       = 6000
	// syncd keeps the description short so fields fit in the total.
	discordSummaryBudget = 1500
	discordValueMax      = 400
)

// Embed colours.
const (
	discordRed    = 0xE74C3C
	discordOrange = 0xE67E22
	discordGreen  = 0x2ECC71
	discordBlue   = 0x3498DB
	discordPurple = 0x9B59B6
	discordGrey   = 0x95A5A6
)

// discordPayload is the body of Discord's "Execute Webhook" request.
// syncd leaves content empty: the embed carries the whole alert.
type discordPayload struct {
	Content string `json:"content,omitempty"`
	// AllowedMentions with an empty parse list stops "@everyone" or a
	// role mention in an object name or value from pinging anyone.
	AllowedMentions discordMentions `json:"allowed_mentions"`
	Embeds          []discordEmbed  `json:"embeds"`
}

type discordMentions struct {
	Parse []string `json:"parse"`
}

type discordEmbed struct {
	Title       string         `json:"title"`
	Description string         `json:"description,omitempty"`
	Color       int            `json:"color"`
	Fields      []discordField `json:"fields,omitempty"`
	Timestamp   string         `json:"timestamp,omitempty"`
	Footer      *discordFooter `json:"footer,omitempty"`
}

type discordField struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Inline bool   `json:"inline"`
}

type discordFooter struct {
	Text string `json:"text"`
}

func discordColor(m message) int {
	if m.ev.Resolved {
		return discordGreen
	}
	switch m.ev.Type {
	case EventDrift:
		return discordOrange
	case EventConflict, EventError:
		return discordRed
	case EventSync, EventOverlap:
		return discordBlue
	case EventHandoff:
		return discordPurple
	}
	return discordGrey
}

// renderDiscord builds the Discord message for m within Discord's limits.
func renderDiscord(m message) ([]byte, error) {
	title := fit(m.title(), discordTitleMax, nil)
	e := discordEmbed{
		Title:       title,
		Description: fit(m.summary(), discordSummaryBudget, nil),
		Color:       discordColor(m),
		Timestamp:   formatTime(m.ev.Time),
		Footer:      &discordFooter{Text: fit(fmt.Sprintf("syncd alert %q · %s · fingerprint %s", m.sink, m.state(), m.fingerprint), discordFooterMax, nil)},
	}
	total := utf16Len(e.Title) + utf16Len(e.Description) + utf16Len(e.Footer.Text)
	addField := func(f discordField) {
		e.Fields = append(e.Fields, f)
		total += utf16Len(f.Name) + utf16Len(f.Value)
	}
	for _, f := range m.facts() {
		if f.name == "Time" { // shown by the embed's timestamp
			continue
		}
		addField(discordField{Name: f.name, Value: fit(f.value, discordFieldValueMax, nil), Inline: true})
	}
	const reserve = 100 // for the note about fields left out
	shown := 0
	for _, f := range m.ev.Fields {
		df := discordFieldOf(f)
		size := utf16Len(df.Name) + utf16Len(df.Value)
		if len(e.Fields) >= discordFieldsMax-1 || total+size > discordTotalMax-reserve {
			break
		}
		addField(df)
		shown++
	}
	if rest := len(m.ev.Fields) - shown; rest > 0 {
		addField(discordField{Name: "More", Value: fmt.Sprintf("…and %d more field(s) not shown", rest)})
	}
	return marshal(discordPayload{
		AllowedMentions: discordMentions{Parse: []string{}},
		Embeds:          []discordEmbed{e},
	})
}

// discordFieldOf is one field as an embed field.
func discordFieldOf(f Field) discordField {
	name := fieldHeading(f)
	if f.Class != "" {
		name += " — " + oneLine(f.Class)
	}
	var b strings.Builder
	b.WriteString("Desired: " + discordValue(f.Desired))
	b.WriteString("\nLive: " + discordValue(f.Live))
	if c := culpritText(f.Culprit); c != "" {
		b.WriteString("\nChanged by: " + fit(c, 150, nil))
	}
	return discordField{
		Name:  fit(name, discordFieldNameMax, nil),
		Value: fit(b.String(), discordFieldValueMax, nil),
	}
}

func discordValue(v string) string {
	if v == "" {
		return "*unset*"
	}
	return fitCode(v, discordValueMax, nil)
}
