// Package finetune is the product's second half: it fine-tunes the agent's model on the
// user's repository. Its parts, each a package of its own:
//
//   - env: how a repository's tests run, run in the agent's sandbox on a private copy, per
//     test, cached by commit;
//   - synth: verified training tasks made from the repository (procedural mutations and
//     removals for Go so far), validated behind one build with a switch;
//   - task: the task store, a documented, versioned format;
//   - rollout: the rollout runner (Run: groups of G agent.Run episodes per task, each on a
//     private copy of the base commit with the task's patch, several at once over one or more
//     Ollama hosts, logprobs on; a record per episode, a failed one an error and never a
//     reward of 0; resumable) and the turning of a trajectory into the trainer's
//     token-exact rollouts (Build);
//   - trainer: the Go client of the Python GRPO + LoRA trainer (trainer/frognano_trainer),
//     which speaks JSON lines over a pipe;
//   - frontier: per-task pass-rate estimates, the choice of groups to train on, the
//     held-out split, and the controller of the synthesizers' knobs (pure logic, a
//     versioned state the daemon persists);
//   - gate: the held-out gate's rule (a paired test over tasks) that lets a candidate model
//     replace the one in use only if its held-out pass rate did not fall;
//   - registry: the books of the models fine-tuning makes (names by repository and step,
//     digests, the one in use, rollback, keeping the last few), one atomic state file per
//     repository that the language server reads;
//   - reward: an episode's reward from its task's hidden tests, run on a tree frognano
//     builds (base commit, task patch, only the agent's non-test, non-configuration files),
//     behind a screen of what the agent added and checks that the results were not forged.
//   - loop: one iteration of the online loop (synth → rollouts → frontier update → GRPO
//     train → merged export imported under the registry's name → held-out gate → switch)
//     as a resumable state machine over one atomic state file; `frognano finetune step`;
//   - daemon: the loop's iterations one after another in a background process per
//     repository (flock, schedule, GPU lock, yielding the GPU, atomic status file);
//     `frognano finetune start|stop|status`.
//   - report: what the loop did, read from its files (Collect: headline numbers and series,
//     which status shows too) and rendered as an HTML page with PNG plots (Write);
//     `frognano finetune report`.
//
// Rewards build with internal/gocache: a trusted Go build cache of the base commit's
// dependencies (the standard library and the module cache's packages, never the
// repository's own or its hidden tests: the episodes' commands can read it) under a scratch
// one per run, so that no episode's command can plant a build result a reward trusts.
//
// `frognano finetune --help` lists the steps.
package finetune
