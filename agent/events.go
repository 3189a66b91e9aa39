package agent

// EventKind names a progress event.
type EventKind string

const (
	EventStep      EventKind = "step"       // a model turn starts
	EventThinking  EventKind = "thinking"   // reasoning text streamed (Text)
	EventText      EventKind = "text"       // answer text streamed (Text)
	EventToolStart EventKind = "tool_start" // Tool, Title
	EventToolEnd   EventKind = "tool_end"   // Tool, Title, Failed
	EventNotice    EventKind = "notice"     // something the user should know (Text)
	EventDone      EventKind = "done"       // Exit
)

// Event is one progress report. Titles are written for people: "Reading lsp/server.go",
// "Running go test ./...".
type Event struct {
	Kind   EventKind `json:"kind"`
	Step   int       `json:"step"`
	Text   string    `json:"text,omitempty"`
	Tool   string    `json:"tool,omitempty"`
	Title  string    `json:"title,omitempty"`
	Failed bool      `json:"failed,omitempty"`
	Exit   Exit      `json:"exit,omitempty"`
}
