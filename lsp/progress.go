package lsp

import (
	"context"
	"encoding/json"

	"go.lsp.dev/protocol"

	"github.com/frognano/frognano/agent"
)

// progress reports one run through $/progress; with a client that cannot show progress
// every method is a no-op.
type progress struct {
	s     *server
	ctx   context.Context
	token protocol.ProgressToken
	on    bool
}

// beginProgress begins reporting under token; cancellable says whether the client shows a
// cancel button (window/workDoneProgress/cancel reaches the run of that token).
func (s *server) beginProgress(ctx context.Context, caps clientCaps, token, title string, cancellable bool) *progress {
	p := &progress{s: s, ctx: context.Background(), token: protocol.String(token)}
	if !caps.progress {
		return p
	}
	if err := s.client.WorkDoneProgressCreate(ctx, &protocol.WorkDoneProgressCreateParams{Token: p.token}); err != nil {
		s.log.Printf("workDoneProgress/create: %v", err)
		return p
	}
	p.on = true
	p.send(protocol.WorkDoneProgressBegin{Kind: "begin", Title: title, Cancellable: ptr(cancellable), Message: ptr("starting")})
	return p
}

func (p *progress) send(v any) {
	if !p.on {
		return
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return
	}
	if err := p.s.client.Progress(p.ctx, &protocol.ProgressParams{Token: p.token, Value: raw}); err != nil {
		p.s.log.Printf("$/progress: %v", err)
	}
}

// event turns the agent's events into progress reports people can read, and into the
// trace when the client asked for one.
func (p *progress) event(ev agent.Event) {
	if raw, err := json.Marshal(ev); err == nil {
		p.s.tracef("agent: "+string(ev.Kind)+" step "+itoa(ev.Step)+" "+ev.Title, string(raw))
	}
	var msg string
	switch ev.Kind {
	case agent.EventStep:
		msg = "thinking (step " + itoa(ev.Step) + ")"
	case agent.EventToolStart:
		msg = ev.Title
	case agent.EventNotice:
		msg = ev.Text
	default:
		return
	}
	p.report(msg)
}

// report shows msg as the run's current state.
func (p *progress) report(msg string) {
	p.send(protocol.WorkDoneProgressReport{Kind: "report", Message: &msg})
}

func (p *progress) end(msg string) {
	p.send(protocol.WorkDoneProgressEnd{Kind: "end", Message: &msg})
	p.on = false
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
