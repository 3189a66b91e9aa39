package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/frognano/frognano/agent/sandbox"
	"github.com/frognano/frognano/agent/workspace"
	"github.com/frognano/frognano/internal/cachedir"
)

// Model is the boundary to the runtime; *api.Client satisfies it.
type Model interface {
	Chat(ctx context.Context, req *api.ChatRequest, fn api.ChatResponseFunc) error
	Show(ctx context.Context, req *api.ShowRequest) (*api.ShowResponse, error)
}

// ErrNoTools means the model cannot call tools, so no episode can run.
var ErrNoTools = errors.New("the model does not support tool calling")

// episode is the state of one run.
type episode struct {
	opts   Options
	task   Task
	model  Model
	ws     *workspace.Workspace
	runner *sandbox.Runner
	disk   *diskGuard
	traj   *trajectory
	think  bool

	msgs  []api.Message
	usage Usage
	// failKey and failRepeats detect the same failing call made again and again.
	failKey     string
	failRepeats int
	// emptyReplies counts consecutive replies that produced tokens but nothing to act on.
	emptyReplies int
	// ratio is tokens per character of the prompt, measured on the latest reply.
	ratio float64
	// trajFailed: the user was told that the trajectory could not be written.
	trajFailed bool
}

// Run runs one episode of the agent on task and returns its result. It fails with an error
// only when no episode could start (the folder, the model, the sandbox); anything that
// goes wrong during the episode is an Exit in the Result.
func Run(ctx context.Context, model Model, task Task, opts Options) (*Result, error) {
	opts = opts.withDefaults()
	start := time.Now()
	if opts.Model == "" {
		return nil, errors.New("agent: no model named")
	}
	think, err := detectThinking(ctx, model, opts)
	if err != nil {
		return nil, err
	}

	workDir := opts.WorkDir
	if workDir == "" {
		if workDir, err = os.MkdirTemp("", "frognano-agent-"); err != nil {
			return nil, err
		}
		if !opts.KeepCopy {
			defer os.RemoveAll(workDir)
		}
	}
	var ws *workspace.Workspace
	if task.Warm != nil {
		ws, err = task.Warm.Take(ctx, task.Overlays)
	} else {
		ws, err = workspace.Prepare(ctx, task.Dir, filepath.Join(workDir, "repo"), task.Overlays)
	}
	if err != nil {
		return nil, err
	}
	if !opts.KeepCopy {
		defer ws.Remove()
	}
	runner, err := newRunner(ctx, ws, opts)
	if err != nil {
		return nil, fmt.Errorf("agent: sandbox: %w", err)
	}
	defer runner.Close()
	traj, err := openTrajectory(opts.Trajectory, opts.TrajectoryDir, start)
	if err != nil {
		return nil, fmt.Errorf("agent: trajectory: %w", err)
	}
	defer traj.close()

	own, shared := runner.DiskDirs()
	disk, err := newDiskGuard(opts.DiskBudget, append([]string{ws.Root}, own...), shared)
	if err != nil {
		return nil, err
	}
	e := &episode{opts: opts, task: task, model: model, ws: ws, runner: runner, traj: traj, think: think, disk: disk}
	if iso := runner.Isolation(); iso.Why != "" {
		e.notice("Commands run with reduced isolation on this machine: " + iso.Summary())
	}
	e.msgs = []api.Message{
		{Role: "system", Content: systemPrompt(ws.Root)},
		{Role: "user", Content: task.Instruction},
	}
	var overlays []string
	for p := range task.Overlays {
		overlays = append(overlays, p)
	}
	slices.Sort(overlays)
	e.record(startRecord{Type: "start", Version: TrajectoryVersion, Time: start, Model: opts.Model,
		Task: taskRecord{Dir: ws.Source, Instruction: task.Instruction, Overlays: overlays},
		Options: optionsRecord{NumCtx: opts.NumCtx, MaxSteps: opts.MaxSteps, MaxTokensPerTurn: opts.MaxTokensPerTurn,
			MaxTimeS: opts.MaxTime.Seconds(), Temperature: *opts.Temperature, TopP: opts.TopP, TopK: opts.TopK, Think: think},
		Tools: apiTools(), Messages: e.msgs})

	ectx, cancel := context.WithTimeout(ctx, opts.MaxTime)
	defer cancel()
	res := e.loop(ctx, ectx)

	// The copy's changes are computed even after a failure: partial work is still shown.
	changes, cerr := ws.Changes(context.WithoutCancel(ctx))
	if cerr != nil && res.Exit == ExitDone {
		res.Exit, res.Error = ExitToolError, cerr.Error()
	}
	res.Changes = changes
	e.usage.WallTime = time.Since(start)
	res.Usage = e.usage
	if traj != nil {
		res.Trajectory = traj.path
	}
	if opts.KeepCopy {
		res.Copy = ws.Root
	}
	end := endRecord{Type: "end", Exit: res.Exit, Error: res.Error, Answer: res.Answer, Steps: res.Steps, Usage: res.Usage, EndTime: time.Now()}
	if changes != nil {
		end.Diff, end.Files = changes.Diff, changes.Files
	}
	e.record(end)
	if err := traj.failure(); err != nil {
		res.TrajectoryError = fmt.Sprintf("writing the trajectory %s failed: %v; it holds the records before that only, so do not train on it", traj.path, err)
	}
	opts.OnEvent(Event{Kind: EventDone, Step: res.Steps, Exit: res.Exit, Text: res.Error})
	return res, nil
}

// newRunner is the sandbox of an episode on ws. Commands may read the copy's git objects
// (the agent's repository borrows them) but not write them: frognano's own repository of
// the copy stays out of their reach. Their Go build cache is the repository's own: what
// one repository's commands leave there is trusted by later builds, and so by the rewards
// of training on it.
//
// FROGNANO_SANDBOX_GOCACHE, when set, names one Go build cache for every repository
// instead: for test suites, whose every test is a new repository that would otherwise
// compile the standard library again. It gives up that separation, so it is not for
// everyday use.
//
// Options.GoCache replaces that cache by two layers, the helper being this program. It
// needs a sandbox that confines writes (bubblewrap): elsewhere a command can rewrite the
// trusted layer, or another episode's scratch, and the rewards computed with them could
// not be trusted, which is what the layers are for.
func newRunner(ctx context.Context, ws *workspace.Workspace, opts Options) (*sandbox.Runner, error) {
	return newRunnerIn(ctx, ws, opts, "")
}

// newRunnerIn is newRunner in isolation mode mode ("": the strongest available); tests
// of the weaker modes force one.
func newRunnerIn(ctx context.Context, ws *workspace.Workspace, opts Options, mode sandbox.Mode) (*sandbox.Runner, error) {
	// The user's folder and frognano's state are hidden as well as the homes: a folder kept
	// outside the homes (/srv, /work) would show its history and untracked files, and a
	// cache folder there the task store, whose patches are the answers of training tasks.
	// So is the rest of its repository (a subfolder's top, a worktree's main .git: the
	// sandbox hides a hidden folder's repository with it).
	so := sandbox.Options{
		ReadOnly: append([]string{ws.ObjectsDir()}, opts.ReadOnly...),
		Hide:     append([]string{ws.Source, cachedir.Dir()}, opts.Hide...),
		GoCache:  goCacheFor(ws, opts),
		Limits:   opts.Limits,
		Mode:     mode,
	}
	if opts.GoCache != nil {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		if err := opts.GoCache.Sandbox(&so, exe); err != nil {
			return nil, err
		}
	}
	r, err := sandbox.NewRunner(ctx, so)
	if err != nil {
		return nil, err
	}
	if iso := r.Isolation(); opts.GoCache != nil && !iso.WriteConfined {
		r.Close()
		return nil, fmt.Errorf("Options.GoCache needs the bubblewrap sandbox, the only one that keeps its trusted layer read-only to the episode's commands (rewards computed over a layer they can rewrite cannot be trusted); this machine's is %s: install bubblewrap and check with `frognano doctor`", iso.Summary())
	}
	return r, nil
}

// goCacheFor is the Go build cache of the commands run on ws.
func goCacheFor(ws *workspace.Workspace, opts Options) string {
	if opts.GoCacheDir != "" {
		return opts.GoCacheDir
	}
	if shared := os.Getenv("FROGNANO_SANDBOX_GOCACHE"); shared != "" {
		return shared
	}
	return sandbox.GoCacheFor(ws.Source)
}

// ending is how an episode ends: its exit, the reason in words (all but ExitDone) and,
// for ExitDone, the model's answer.
type ending struct {
	exit   Exit
	reason string
	answer string
}

func endWith(exit Exit, format string, a ...any) *ending {
	return &ending{exit: exit, reason: fmt.Sprintf(format, a...)}
}

// stopped is the ending of an episode whose context ended: the user cancelled it, or it
// ran past MaxTime (ectx's deadline).
func (e *episode) stopped(ctx context.Context) *ending {
	if ctx.Err() != nil {
		return endWith(ExitCancelled, "cancelled")
	}
	return endWith(ExitMaxTime, "the episode ran past its time limit of %s", e.opts.MaxTime)
}

// loop is the linear agent loop, in mini-swe-agent's shape: each step asks the model and
// runs its calls, and returns the step's record and, when the episode is over, its
// ending; the record is written here, the one place, after every step. Limits checked
// before a step (time, steps) end the episode without a record, as no step was taken.
func (e *episode) loop(ctx, ectx context.Context) *Result {
	res := &Result{}
	for step := 1; ; step++ {
		var end *ending
		switch {
		case ectx.Err() != nil:
			end = e.stopped(ctx)
		case step > e.opts.MaxSteps:
			end = endWith(ExitMaxSteps, "the model used all %d steps without finishing", e.opts.MaxSteps)
		default:
			res.Steps = step
			var rec *stepRecord
			rec, end = e.step(ctx, ectx, step)
			if rec != nil {
				e.record(*rec)
			}
		}
		if end != nil {
			res.Exit, res.Error, res.Answer = end.exit, end.reason, end.answer
			return res
		}
	}
}

// step is one turn: the model's reply and the calls in it, run. It returns the turn's
// record (nil when there is nothing to record: the run was stopped while the model was
// answering) and, when the episode ends with this turn, its ending.
func (e *episode) step(ctx, ectx context.Context, step int) (*stepRecord, *ending) {
	stepStart := time.Now()
	rec := &stepRecord{Type: "step", Step: step}
	notes, fits := e.fitContext()
	rec.Notes = notes
	if !fits {
		return rec, endWith(ExitContext, "the conversation no longer fits num_ctx=%d", e.opts.NumCtx)
	}
	e.opts.OnEvent(Event{Kind: EventStep, Step: step, Title: fmt.Sprintf("Step %d", step)})

	chars := e.promptChars()
	reply, final, err := e.chat(ectx, step)
	rec.TimingMs.Model = ms(time.Since(stepStart))
	if ectx.Err() != nil {
		return nil, e.stopped(ctx)
	}
	if err != nil {
		return rec, endWith(ExitModelError, "%s", e.opts.Explain(err))
	}
	e.usage.ModelTime += time.Since(stepStart)
	e.usage.PromptTokens += final.PromptEvalCount
	e.usage.OutputTokens += final.EvalCount
	e.calibrate(chars, final.PromptEvalCount)
	rec.Assistant, rec.DoneReason = reply, final.DoneReason
	if e.opts.Logprobs {
		lp := final.Logprobs
		if lp == nil {
			lp = []api.Logprob{} // asked for, and the reply had no token but the end of turn
		}
		rec.Logprobs = &lp
	}
	rec.Tokens = tokenCounts{Prompt: final.PromptEvalCount, Output: final.EvalCount, PromptEvalMs: ms(final.PromptEvalDuration)}
	e.msgs = append(e.msgs, reply)

	if final.DoneReason == "length" {
		return rec, endWith(ExitMaxTokens, "the model's turn reached the limit of %d tokens", e.opts.MaxTokensPerTurn)
	}
	if final.PromptEvalCount+final.EvalCount >= e.opts.NumCtx {
		return rec, endWith(ExitContext, "the conversation filled num_ctx=%d", e.opts.NumCtx)
	}

	calls := structuredCalls(reply)
	recovered := false
	if len(calls) == 0 {
		calls, _ = recoverCalls(reply.Content)
		recovered = len(calls) > 0
	}
	if len(calls) == 0 {
		answer := stripThinking(reply.Content)
		if answer == "" && final.EvalCount > endOfTurnTokens {
			gaveUp := e.emptyReply(step, rec, final.EvalCount)
			rec.TimingMs.Overhead = ms(time.Since(stepStart)) - rec.TimingMs.Model
			if gaveUp {
				// Not ExitDone: the model never finished, and done would let the editor
				// apply its partial changes with an "answer" it never wrote. The editor
				// shows "the agent stopped (repeated_failing_call): " and this text.
				return rec, endWith(ExitRepeatedError, "the model replied with nothing %d times in a row (possibly calls to a tool it does not have; its tools are Read, Write, Edit, Glob and Bash)", e.emptyReplies)
			}
			return rec, nil
		}
		rec.TimingMs.Overhead = ms(time.Since(stepStart)) - rec.TimingMs.Model
		return rec, &ending{exit: ExitDone, answer: answer}
	}
	e.emptyReplies = 0

	toolStart := time.Now()
	for _, c := range calls {
		tr, err := e.execute(ectx, step, c)
		tr.Recovered = recovered
		rec.Tools = append(rec.Tools, tr)
		if err != nil {
			if ectx.Err() != nil {
				return rec, e.stopped(ctx)
			}
			return rec, endWith(ExitToolError, "%s failed: %v", c.Name, err)
		}
		e.msgs = append(e.msgs, api.Message{Role: "tool", ToolName: tr.Name, Content: tr.Result})
		if e.repeatedFailure(tr) {
			return rec, endWith(ExitRepeatedError, "the model repeated the same failing %s call %d times", tr.Name, e.failRepeats)
		}
	}
	toolTime := time.Since(toolStart)
	e.usage.ToolTime += toolTime
	rec.TimingMs.Tools = ms(toolTime)
	rec.TimingMs.Overhead = ms(time.Since(stepStart)) - rec.TimingMs.Model - rec.TimingMs.Tools
	return rec, nil
}

// chat sends the conversation and gathers the streamed reply into one message, reporting
// thinking and text as they arrive.
func (e *episode) chat(ctx context.Context, step int) (api.Message, api.ChatResponse, error) {
	stream := true
	req := &api.ChatRequest{
		Model:    e.opts.Model,
		Messages: e.msgs,
		Tools:    apiTools(),
		Stream:   &stream,
		Logprobs: e.opts.Logprobs,
		Options: map[string]any{
			"num_ctx":     e.opts.NumCtx,
			"num_predict": e.opts.MaxTokensPerTurn,
			"temperature": *e.opts.Temperature,
			"top_p":       e.opts.TopP,
			"top_k":       e.opts.TopK,
		},
	}
	if e.think {
		req.Think = &api.ThinkValue{Value: true}
	}
	var msg api.Message
	var final api.ChatResponse
	var logprobs []api.Logprob
	err := e.model.Chat(ctx, req, func(r api.ChatResponse) error {
		if r.Message.Thinking != "" {
			msg.Thinking += r.Message.Thinking
			e.opts.OnEvent(Event{Kind: EventThinking, Step: step, Text: r.Message.Thinking})
		}
		if r.Message.Content != "" {
			msg.Content += r.Message.Content
			e.opts.OnEvent(Event{Kind: EventText, Step: step, Text: r.Message.Content})
		}
		msg.ToolCalls = append(msg.ToolCalls, r.Message.ToolCalls...)
		logprobs = append(logprobs, r.Logprobs...)
		if r.Done {
			final = r
		}
		return nil
	})
	msg.Role = "assistant"
	final.Logprobs = logprobs
	if err == nil && ctx.Err() == nil && !final.Done {
		err = errors.New("the model's reply ended without a final message")
	}
	return msg, final, err
}

// execute runs one call. Mistakes in the call become a failed ToolRecord that the model
// reads; only a broken sandbox or a cancelled run return an error.
func (e *episode) execute(ctx context.Context, step int, c rawCall) (tr ToolRecord, err error) {
	tr = ToolRecord{Name: c.Name, Args: c.Args, Title: c.Name}
	start := time.Now()
	// On the named result: a deferred write to a local would come after the record was
	// copied out, and every call would be recorded as taking 0 ms.
	defer func() { tr.Ms = time.Since(start).Milliseconds() }()
	fail := func(msg string) (ToolRecord, error) {
		tr.Failed, tr.Result = true, "Error: "+msg
		e.opts.OnEvent(Event{Kind: EventToolEnd, Step: step, Tool: tr.Name, Title: tr.Title, Failed: true})
		return tr, nil
	}
	if c.Bad != "" {
		return fail(c.Bad)
	}
	t := findTool(c.Name)
	if t == nil {
		return fail(fmt.Sprintf("there is no tool named %q; the tools are Read, Write, Edit, Glob and Bash", c.Name))
	}
	a, err := checkArgs(t, c.Args)
	if err != nil {
		return fail(err.Error())
	}
	tr.Title = t.title(a)
	e.opts.OnEvent(Event{Kind: EventToolStart, Step: step, Tool: t.name, Title: tr.Title})
	out, err := t.run(ctx, e, a)
	var te *toolError
	switch {
	case errors.As(err, &te):
		return fail(te.msg)
	case err != nil:
		tr.Failed, tr.Result = true, "Error: "+err.Error()
		return tr, err
	}
	tr.Result = out
	e.opts.OnEvent(Event{Kind: EventToolEnd, Step: step, Tool: t.name, Title: tr.Title})
	return tr, nil
}

// Empty replies. Ollama 0.17.4's tool parser silently drops a structured call to a tool
// that is not in the request ("Grep", "LS": tools of other harnesses): the reply arrives
// with no text and no calls although the model produced tokens. Taken as the end of the
// episode, it would leave the user an empty answer and no reason; instead the model is told,
// in the voice of the tools' errors, and the episode goes on. Reasoning alone is no answer,
// so a reply with thinking but no text counts as empty too.
const (
	emptyReplyNudge = "Error: your reply was empty: no text and no tool call. A call to a tool other than Read, Write, Edit, Glob and Bash cannot run, since there is no such tool. Call one of those tools, or give your final answer."
	// maxEmptyReplies: the model is told once; an empty reply again right after that means
	// the reminder did not help (unlike a failing call's error, it tells the model nothing
	// new the second time), and every further turn may cost thousands of tokens.
	maxEmptyReplies = 2
	// endOfTurnTokens: Ollama counts the token that ends the turn in eval_count (v0.17.4,
	// both engines: a reply that ends at once reports 1), so only a count above it means
	// tokens were produced and lost. A reply that is just the end token (or reports no count,
	// 0) is the model ending its turn with nothing to add; as in the harness it was trained
	// in, that ends the episode as done, with its changes: telling it off there could turn
	// finished work into a failed episode.
	endOfTurnTokens = 1
)

// emptyReply handles a reply with tokens but no text or calls: it records a note and, below
// the bound, sends the model emptyReplyNudge as a user message and tells the user. It reports
// whether the bound is reached and the episode must end.
func (e *episode) emptyReply(step int, rec *stepRecord, tokens int) bool {
	e.emptyReplies++
	note := fmt.Sprintf("empty reply %d of %d: %d output tokens but no text and no tool call (possibly a call to a tool the model does not have); ", e.emptyReplies, maxEmptyReplies, tokens)
	if e.emptyReplies >= maxEmptyReplies {
		rec.Notes = append(rec.Notes, note+"ended the episode")
		return true
	}
	rec.Notes = append(rec.Notes, note+"sent the user message: "+emptyReplyNudge)
	e.msgs = append(e.msgs, api.Message{Role: "user", Content: emptyReplyNudge})
	e.opts.OnEvent(Event{Kind: EventNotice, Step: step, Text: "The model replied with nothing (possibly a call to a tool it does not have); reminding it of its tools."})
	return false
}

// repeatedFailure reports whether the model has now made the same failing call three
// times in a row: it is stuck, and more turns would only burn time.
func (e *episode) repeatedFailure(tr ToolRecord) bool {
	if !tr.Failed {
		e.failKey, e.failRepeats = "", 0
		return false
	}
	b, _ := json.Marshal(tr.Args)
	key := tr.Name + string(b)
	if key == e.failKey {
		e.failRepeats++
	} else {
		e.failKey, e.failRepeats = key, 1
	}
	return e.failRepeats >= 3
}

func structuredCalls(m api.Message) []rawCall {
	var out []rawCall
	for _, tc := range m.ToolCalls {
		out = append(out, rawCall{Name: tc.Function.Name, Args: tc.Function.Arguments.ToMap()})
	}
	return out
}

// record writes rec to the trajectory. The first failed write is told to the user at once
// (a full disk would otherwise lose the training data without a word); Run puts it in the
// Result too. The episode goes on: its changes are still worth having.
func (e *episode) record(rec any) {
	if err := e.traj.write(rec); err != nil && !e.trajFailed {
		e.trajFailed = true
		e.notice(fmt.Sprintf("Writing the trajectory %s failed (%v); it is incomplete from here on and must not be used for training.", e.traj.path, err))
	}
}

func (e *episode) notice(text string) {
	e.opts.OnEvent(Event{Kind: EventNotice, Text: text})
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// detectThinking decides whether to send think:true: Options.Think when set, else whether
// the model declares the capability (models without it answer think:true with a 400).
func detectThinking(ctx context.Context, model Model, opts Options) (bool, error) {
	show, err := model.Show(ctx, &api.ShowRequest{Model: opts.Model})
	if err != nil {
		return false, err
	}
	caps := map[string]bool{}
	for _, c := range show.Capabilities {
		caps[string(c)] = true
	}
	if !caps["tools"] {
		return false, fmt.Errorf("%w (%s)", ErrNoTools, opts.Model)
	}
	if opts.Think != nil {
		return *opts.Think, nil
	}
	return caps["thinking"], nil
}
