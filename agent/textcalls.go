package agent

import (
	"encoding/json"
	"strings"

	"github.com/frognano/frognano/internal/lazyregexp"
)

// rawCall is a tool call before its arguments are checked.
type rawCall struct {
	Name string
	Args map[string]any
	// Bad is set when the call could be seen but not read; it goes back to the model.
	Bad string
}

var (
	xmlCallRe  = lazyregexp.New(`(?s)<function=([^>\s]+)>(.*?)</function>`)
	xmlParamRe = lazyregexp.New(`(?s)<parameter=([^>\s]+)>(.*?)</parameter>`)
	jsonCallRe = lazyregexp.New(`(?s)<tool_call>\s*(\{.*?\})\s*</tool_call>`)
	fenceRe    = lazyregexp.New("(?s)^```(?:json)?\\s*(\\{.*\\})\\s*```$")
)

// recoverCalls finds tool calls that a model wrote as text instead of structured calls —
// small models and imperfect runtime parsers both produce them: the XML form FrogNano was
// trained on, JSON inside <tool_call>, or a bare (or fenced) JSON object that is the whole
// message. It returns the calls and the text with them removed.
func recoverCalls(content string) ([]rawCall, string) {
	var calls []rawCall
	rest := content
	if xmlCallRe.MatchString(rest) {
		for _, m := range xmlCallRe.FindAllStringSubmatch(rest, -1) {
			c := rawCall{Name: m[1], Args: map[string]any{}}
			for _, p := range xmlParamRe.FindAllStringSubmatch(m[2], -1) {
				c.Args[p[1]] = xmlValue(p[2])
			}
			calls = append(calls, c)
		}
		rest = xmlCallRe.ReplaceAllString(rest, "")
	} else if jsonCallRe.MatchString(rest) {
		for _, m := range jsonCallRe.FindAllStringSubmatch(rest, -1) {
			calls = append(calls, jsonCall(m[1]))
		}
		rest = jsonCallRe.ReplaceAllString(rest, "")
	} else if t := strings.TrimSpace(rest); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "```") {
		body := t
		if m := fenceRe.FindStringSubmatch(t); m != nil {
			body = m[1]
		}
		if c := jsonCall(body); c.Bad == "" && c.Name != "" {
			return []rawCall{c}, ""
		}
		return nil, content
	}
	rest = strings.NewReplacer("<tool_call>", "", "</tool_call>", "").Replace(rest)
	return calls, strings.TrimSpace(rest)
}

// xmlValue is a parameter's text: the line breaks that frame it are layout, not content;
// JSON-looking values stay text here and are typed later against the tool's schema.
func xmlValue(s string) any {
	s = strings.TrimPrefix(s, "\n")
	s = strings.TrimSuffix(s, "\n")
	return s
}

// jsonCall reads {"name": …, "arguments": {…}} (or "parameters"; arguments may be a JSON
// string, as some templates emit).
func jsonCall(s string) rawCall {
	var v struct {
		Name       string          `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return rawCall{Bad: "a tool call in the text is not valid JSON: " + err.Error()}
	}
	raw := v.Arguments
	if len(raw) == 0 {
		raw = v.Parameters
	}
	args := map[string]any{}
	if len(raw) > 0 {
		var str string
		if json.Unmarshal(raw, &str) == nil {
			raw = json.RawMessage(str)
		}
		if err := json.Unmarshal(raw, &args); err != nil {
			return rawCall{Name: v.Name, Bad: "the arguments of " + v.Name + " are not a JSON object"}
		}
	}
	return rawCall{Name: v.Name, Args: args}
}

var thinkRe = lazyregexp.New(`(?s)<think>.*?</think>`)

// stripThinking removes reasoning from text meant for files or the user: whole
// <think>…</think> blocks, and everything up to a lone </think> (when the prompt opened the
// block, the model's text starts inside it). An unclosed <think> hides the rest.
func stripThinking(s string) string {
	s = thinkRe.ReplaceAllString(s, "")
	if i := strings.LastIndex(s, "</think>"); i >= 0 {
		s = s[i+len("</think>"):]
	}
	if i := strings.Index(s, "<think>"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
