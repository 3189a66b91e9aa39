package agent

import (
	"time"

	"github.com/frognano/frognano/agent/sandbox"
	"github.com/frognano/frognano/agent/workspace"
	"github.com/frognano/frognano/internal/gocache"
)

// Task is one job for the agent.
type Task struct {
	// Dir is the user's folder. It is copied, never written.
	Dir string
	// Instruction is the first user message.
	Instruction string
	// Overlays are unsaved editor buffers laid over the copy: relative path → content.
	Overlays map[string][]byte
	// Warm, if set, holds a copy of Dir made ahead of time; the run takes it instead of
	// copying Dir (much faster on a large folder).
	Warm *workspace.Warm
}

// Options tune a run; zero fields take the defaults of FrogNano's evaluation harness, except
// where zero means something of its own: those are pointers (Temperature, Think), nil
// taking the default.
type Options struct {
	Model string
	// NumCtx is sent as num_ctx on every request.
	NumCtx int
	// MaxSteps bounds model turns (default 100).
	MaxSteps int
	// MaxTokensPerTurn is sent as num_predict (default 8192).
	MaxTokensPerTurn int
	// MaxTime bounds the whole episode (default 30 minutes).
	MaxTime time.Duration
	// Temperature: nil takes FrogNano's recommended 0.6; 0 is greedy decoding (rollouts
	// and evaluations ask for it), so it cannot mean "default". Set it with Temp(0).
	Temperature *float64
	// TopP, TopK: FrogNano's recommended sampling (0.95, 20).
	TopP float64
	TopK int
	// Think: nil = on when the model supports thinking; false = never; true = always.
	Think *bool
	// Logprobs asks Ollama for per-token log probabilities, recorded in the trajectory.
	Logprobs bool
	// BashTimeout is the default for the Bash tool (120 s); the model may ask for another.
	BashTimeout time.Duration
	// DiskBudget is how much the episode's commands may take of the copy's disk in all
	// (default DefaultDiskBudget, and at most half of the free space when it begins); a
	// command that takes more is killed and the model told why.
	DiskBudget int64
	// Limits bound each command of the episode (CPU time, memory, processes, file size,
	// output kept, /tmp); nil means sandbox.DefaultLimits(). Zero fields take their
	// default, except Memory, where 0 means unlimited (see sandbox.Limits).
	Limits *sandbox.Limits
	// GoCache, when set, is the Go build cache of the run's commands, in two layers
	// (internal/gocache): rollouts give every episode a new scratch layer over the trusted
	// layer of the task's base commit, so that nothing one episode's commands build reaches
	// another episode or a reward. Default: the repository's own cache, shared by its runs
	// (sandbox.GoCacheFor), which is faster for the editor but trusts what earlier runs left.
	GoCache *gocache.Layers
	// GoCacheDir, when set (and GoCache is not), is the commands' Go build cache folder
	// instead of the repository's own: rollouts give each episode of a task that builds no
	// Go a private one, since the repository's own is shared by every copy of the same
	// folder, where one episode could leave notes for the next.
	GoCacheDir string
	// Hide are more folders or files the episode's commands find empty (sandbox.Options.Hide)
	// besides the two always hidden: Task.Dir, the user's folder the copy was made from, and
	// frognano's cache folder. Rollouts hide the task's repository and the loop's state.
	Hide []string
	// ReadOnly are more paths the commands may read, bound read-only even inside a hidden
	// place (sandbox.Options.ReadOnly): a Python task's virtual environment in its repository.
	// Each must exist.
	ReadOnly []string
	// WorkDir holds the private copy and the sandbox's home; default a new temp dir,
	// removed at the end.
	WorkDir string
	// Trajectory is the JSON Lines file to write; empty = none (unless TrajectoryDir is
	// set). It is created new: a file that exists already is an error, so that no run
	// overwrites another's training data.
	Trajectory string
	// TrajectoryDir, when Trajectory is empty, receives a trajectory under a name of its
	// own (the start time in UTC and a random part), so that runs started in the same
	// second never share a file. Result.Trajectory says which.
	TrajectoryDir string
	// KeepCopy leaves the private copy on disk (for debugging); its path is in Result.
	KeepCopy bool
	// Explain turns a model error into words for people (what happened, what to do): the
	// CLI and the language server pass ollama.Explain. Default: the error's own text.
	Explain func(error) string
	// OnEvent receives progress; it must not block for long.
	OnEvent func(Event)
}

// DefaultTemperature is FrogNano's recommended sampling temperature.
const DefaultTemperature = 0.6

// Temp is a temperature for Options.Temperature: Temp(0) asks for greedy decoding.
func Temp(t float64) *float64 { return &t }

func (o Options) withDefaults() Options {
	if o.NumCtx == 0 {
		o.NumCtx = 65536
	}
	if o.MaxSteps == 0 {
		o.MaxSteps = 100
	}
	if o.MaxTokensPerTurn == 0 {
		o.MaxTokensPerTurn = 8192
	}
	if o.MaxTime == 0 {
		o.MaxTime = 30 * time.Minute
	}
	if o.Temperature == nil {
		o.Temperature = Temp(DefaultTemperature)
	}
	if o.TopP == 0 {
		o.TopP = 0.95
	}
	if o.TopK == 0 {
		o.TopK = 20
	}
	if o.DiskBudget <= 0 {
		o.DiskBudget = DefaultDiskBudget
	}
	if o.BashTimeout == 0 {
		o.BashTimeout = 120 * time.Second
	}
	if o.Explain == nil {
		o.Explain = func(err error) string { return err.Error() }
	}
	if o.OnEvent == nil {
		o.OnEvent = func(Event) {}
	}
	return o
}

// Exit says why an episode ended.
type Exit string

const (
	ExitDone          Exit = "done"            // a turn without tool calls: the answer
	ExitMaxSteps      Exit = "max_steps"       // MaxSteps turns used
	ExitContext       Exit = "max_context_len" // the conversation no longer fits num_ctx
	ExitMaxTokens     Exit = "max_tokens_per_turn"
	ExitMaxTime       Exit = "max_time"
	ExitModelError    Exit = "llm_error"  // Ollama failed or answered an error
	ExitToolError     Exit = "tool_error" // the sandbox or workspace itself failed
	ExitCancelled     Exit = "cancelled"
	ExitRepeatedError Exit = "repeated_failing_call" // the same failing call, again and again
)

// Result is what an episode produced.
type Result struct {
	Exit Exit `json:"exit"`
	// Error explains a non-done exit in words.
	Error string `json:"error,omitempty"`
	// Answer is the final assistant text, reasoning removed.
	Answer string `json:"answer"`
	// Changes are the file changes in the copy, with the diff.
	Changes *workspace.Changes `json:"changes"`
	Steps   int                `json:"steps"`
	// Trajectory is where the JSON Lines record went, if anywhere.
	Trajectory string `json:"trajectory,omitempty"`
	// TrajectoryError, when set, says that writing the trajectory failed (a full disk,
	// say): the file holds whole records up to that point only, so it must not be used
	// as training data. The episode itself went on.
	TrajectoryError string `json:"trajectory_error,omitempty"`
	// Copy is the private copy's path when Options.KeepCopy is set.
	Copy  string `json:"copy,omitempty"`
	Usage Usage  `json:"usage"`
}

// Usage adds up an episode's costs.
type Usage struct {
	PromptTokens int           `json:"prompt_tokens"`
	OutputTokens int           `json:"output_tokens"`
	ModelTime    time.Duration `json:"model_ns"`
	ToolTime     time.Duration `json:"tool_ns"`
	WallTime     time.Duration `json:"wall_ns"`
}
