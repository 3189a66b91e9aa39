package lsp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/frognano/frognano/lsp/document"
)

// The benchmarks here drive the real binary, `frognano lsp` over stdio, as an editor
// starts it. Ollama is pointed at a closed port: nothing here talks to a model.

// benchBinary builds frognano (not timed: before the benchmark loop) and makes the
// workspace each server is initialized with: a small project, since the server may watch
// its folder. FROGNANO_BENCH_BIN names a binary to measure instead, for comparing two
// builds back to back on a shared machine (say, main's and a branch's).
func benchBinary(b *testing.B) (bin, root, cache string) {
	b.Helper()
	if runtime.GOOS != "linux" {
		b.Skip("reads /proc")
	}
	if bin = os.Getenv("FROGNANO_BENCH_BIN"); bin == "" {
		bin = frognanoBinary(b)
	}
	root = b.TempDir()
	files := map[string]string{
		"go.mod":          "module example.com/calc\n\ngo 1.22\n",
		"calc.go":         "package calc\n\n// Add returns the sum of a and b.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
		"calc_test.go":    "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"Add\")\n\t}\n}\n",
		"tools/report.py": "def report(rows):\n    return len(rows)\n",
	}
	for name, text := range files {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return bin, root, b.TempDir()
}

// benchPeer is the command line of another language server that the start-up and memory
// benchmarks measure instead of frognano, from FROGNANO_BENCH_PEER (split at spaces; e.g.
// lsp-ai's binary), and FROGNANO_BENCH_PEER_INIT its initializationOptions (JSON): the
// peers of issue 13 compared on the same workspace, client and clock. Empty when unset.
func benchPeer() []string {
	return strings.Fields(os.Getenv("FROGNANO_BENCH_PEER"))
}

// initializeLSP sends initialize with the workspace folder and a client like VS Code.
func initializeLSP(p *lspProcess) error {
	params := &protocol.InitializeParams{
		RootURI: ptr(uri.File(p.root)),
		WorkspaceFoldersInitializeParams: protocol.WorkspaceFoldersInitializeParams{
			WorkspaceFolders: protocol.NewNullable([]protocol.WorkspaceFolder{{URI: uri.File(p.root), Name: "calc"}})},
		Capabilities: capsFull(),
	}
	if init := os.Getenv("FROGNANO_BENCH_PEER_INIT"); init != "" {
		if err := json.Unmarshal([]byte(init), &params.InitializationOptions); err != nil {
			return fmt.Errorf("FROGNANO_BENCH_PEER_INIT: %w", err)
		}
	}
	res, err := p.server.Initialize(context.Background(), params)
	if err != nil {
		return fmt.Errorf("initialize: %w (stderr: %s)", err, p.stderr)
	}
	if len(benchPeer()) > 0 {
		return nil // another server: its own name
	}
	if res.ServerInfo.Name != "frognano" {
		return fmt.Errorf("server info %+v", res.ServerInfo)
	}
	return nil
}

// stopLSP shuts the server down the clean way (shutdown, exit) and waits for the process,
// killing it after 60s.
func stopLSP(b *testing.B, p *lspProcess) {
	b.Helper()
	ctx := context.Background()
	err := p.server.Shutdown(ctx)
	if err == nil {
		err = p.server.Exit(ctx)
	}
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
		if err == nil {
			err = fmt.Errorf("frognano lsp did not exit within 60s of exit")
		}
	}
	p.conn.Close()
	if err == nil && p.cmd.ProcessState.ExitCode() != 0 {
		err = fmt.Errorf("frognano lsp exited with %d after shutdown and exit", p.cmd.ProcessState.ExitCode())
	}
	if err != nil {
		b.Fatalf("stopping the server: %v\nstderr:\n%s", err, p.stderr)
	}
}

// BenchmarkColdStart is the time from exec of `frognano lsp` to the initialize response
// (target: 3.9 ms, lsp-ai's in issue 13); shutting the server down again is not timed. It
// reports the mean as ms/op, the median, the 99th percentile (nearest rank) and the
// slowest start; run it long enough for a p99 (-benchtime 200x and more).
func BenchmarkColdStart(b *testing.B) {
	bin, root, cache := benchBinary(b)
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		p, err := launchLSP(b, bin, root, filepath.Join(cache, "lsp.log"), "OLLAMA_HOST=127.0.0.1:1", "FROGNANO_CACHE="+cache)
		if err != nil {
			b.Fatal(err)
		}
		if err := initializeLSP(p); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		b.StopTimer()
		// A client says initialized before anything else (lsp-ai refuses a shutdown first).
		if err := p.server.Initialized(context.Background(), &protocol.InitializedParams{}); err != nil {
			b.Fatal(err)
		}
		stopLSP(b, p)
		b.StartTimer()
	}
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	slices.Sort(lat)
	b.ReportMetric(float64(sum.Microseconds())/1e3/float64(len(lat)), "ms/op")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1e3, "p50-ms")
	b.ReportMetric(float64(lat[max(0, (len(lat)*99+99)/100-1)].Microseconds())/1e3, "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1e3, "max-ms")
}

// BenchmarkIdleMemory is the resident memory of a server that an editor started and
// initialized and that has nothing to do yet (target: 10.6 MB, lsp-ai's in issue 13):
// each op starts `frognano lsp`, initializes it, waits until it has used no CPU for
// 200 ms and reads VmRSS. It reports the median and the largest over the ops (RSS-MB,
// max-RSS-MB) and the median of the part that is the binary's own pages (file-MB: the
// code and tables the start touched, which grows with the binary) and the part that is
// memory it allocated (anon-MB: heap, stacks).
func BenchmarkIdleMemory(b *testing.B) {
	bin, root, cache := benchBinary(b)
	var rss, file, anon []float64
	for b.Loop() {
		p, err := launchLSP(b, bin, root, filepath.Join(cache, "lsp.log"), "OLLAMA_HOST=127.0.0.1:1", "FROGNANO_CACHE="+cache)
		if err != nil {
			b.Fatal(err)
		}
		if err := initializeLSP(p); err != nil {
			b.Fatal(err)
		}
		if err := p.server.Initialized(context.Background(), &protocol.InitializedParams{}); err != nil {
			b.Fatal(err)
		}
		pid := p.cmd.Process.Pid
		waitIdle(b, pid)
		rss = append(rss, procStatusMB(b, pid, "VmRSS"))
		file = append(file, procStatusMB(b, pid, "RssFile"))
		anon = append(anon, procStatusMB(b, pid, "RssAnon"))
		stopLSP(b, p)
	}
	median := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	b.ReportMetric(median(rss), "RSS-MB")
	b.ReportMetric(rss[len(rss)-1], "max-RSS-MB")
	b.ReportMetric(median(file), "file-MB")
	b.ReportMetric(median(anon), "anon-MB")
}

// BenchmarkIdleMemory1000Docs is the resident memory of an idle server holding 1,000 open
// documents (target: under 40 MB). Each op starts `frognano lsp`, initializes it, waits
// for it to be idle and reads its RSS (the baseline), opens 1,000 Go and Python files of
// 100 to 300 lines, asks one code action, waits until the server has used no CPU for
// 200 ms, reads its RSS again, and shuts it down. It reports the means over the ops:
// RSS-MB, baseline-RSS-MB and peak-RSS-MB (VmHWM: the most it held at any moment).
func BenchmarkIdleMemory1000Docs(b *testing.B) {
	bin, root, cache := benchBinary(b)
	docs := benchDocuments(1000)
	var rss, base, peak float64
	for b.Loop() {
		p, err := launchLSP(b, bin, root, filepath.Join(cache, "lsp.log"), "OLLAMA_HOST=127.0.0.1:1", "FROGNANO_CACHE="+cache)
		if err != nil {
			b.Fatal(err)
		}
		if err := initializeLSP(p); err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		if err := p.server.Initialized(ctx, &protocol.InitializedParams{}); err != nil {
			b.Fatal(err)
		}
		pid := p.cmd.Process.Pid
		waitIdle(b, pid)
		base += procStatusMB(b, pid, "VmRSS")

		var last protocol.TextDocumentItem
		for _, d := range docs {
			last = protocol.TextDocumentItem{URI: uri.File(filepath.Join(root, d.path)), LanguageID: protocol.LanguageKind(d.lang), Version: 1, Text: d.text}
			if err := p.server.DidOpen(ctx, &protocol.DidOpenTextDocumentParams{TextDocument: last}); err != nil {
				b.Fatal(err)
			}
		}
		// The answer comes after every didOpen was handled: they run in order, first.
		at := toRange(cursorAt(last.Text, "return"))
		as, err := p.server.CodeAction(ctx, &protocol.CodeActionParams{TextDocument: protocol.TextDocumentIdentifier{URI: last.URI}, Range: at})
		if err != nil || len(as) == 0 {
			b.Fatalf("codeAction: %v, %d actions", err, len(as))
		}
		waitIdle(b, pid)
		rss += procStatusMB(b, pid, "VmRSS")
		peak += procStatusMB(b, pid, "VmHWM")
		stopLSP(b, p)
	}
	n := float64(b.N)
	b.ReportMetric(rss/n, "RSS-MB")
	b.ReportMetric(base/n, "baseline-RSS-MB")
	b.ReportMetric(peak/n, "peak-RSS-MB")
}

// waitIdle waits until the process has used no CPU for 200 ms (at most 10s): its
// background work (a GC cycle, the parse of the document asked about) is done.
func waitIdle(b *testing.B, pid int) {
	b.Helper()
	deadline := time.Now().Add(10 * time.Second)
	prev := cpuTicks(b, pid)
	for time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		t := cpuTicks(b, pid)
		if t == prev {
			return
		}
		prev = t
	}
	b.Logf("pid %d still busy after 10s", pid)
}

// cpuTicks is the user and system CPU time the process has used, in clock ticks.
func cpuTicks(b *testing.B, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name, which is in parentheses and may hold spaces:
	// state is field 3, utime 14 and stime 15.
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// procStatusMB reads a "kB" field of /proc/PID/status, such as VmRSS, in MB.
func procStatusMB(b *testing.B, pid int, field string) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				b.Fatalf("%s: %q", field, line)
			}
			return kb / 1024
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// cursorAt is an empty range at the first occurrence of s in text.
func cursorAt(text, s string) document.Range {
	p := document.PositionOf(text, strings.Index(text, s))
	return document.Range{Start: p, End: p}
}

type benchDoc struct{ path, lang, text string }

// benchDocuments makes n files like a real project's, each of 100 to 300 lines: Go
// sources and tests and Python modules, in packages of ten files.
func benchDocuments(n int) []benchDoc {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]benchDoc, 0, n)
	for i := range n {
		lines := 100 + r.IntN(201)
		pkg := fmt.Sprintf("pkg%02d", i/10)
		switch i % 3 {
		case 0, 1:
			test := i%3 == 1
			name := fmt.Sprintf("%s/file%03d.go", pkg, i)
			if test {
				name = fmt.Sprintf("%s/file%03d_test.go", pkg, i)
			}
			out = append(out, benchDoc{name, "go", benchGoFile(r, pkg, i, lines, test)})
		default:
			out = append(out, benchDoc{fmt.Sprintf("%s/mod%03d.py", pkg, i), "python", benchPyFile(r, i, lines)})
		}
	}
	return out
}

func benchGoFile(r *rand.Rand, pkg string, i, lines int, test bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "// Package %s is generated for a benchmark.\npackage %s\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n", pkg, pkg)
	if test {
		b.WriteString("\t\"testing\"\n")
	}
	b.WriteString(")\n\n")
	fmt.Fprintf(&b, "// Record%d is one row.\ntype Record%d struct {\n\tName  string\n\tCount int\n\tTags  []string\n}\n\n", i, i)
	for j := 0; strings.Count(b.String(), "\n") < lines; j++ {
		switch {
		case test:
			fmt.Fprintf(&b, "func TestCase%d_%d(t *testing.T) {\n\tr := Record%d{Name: %q, Count: %d}\n\tif got := r.Count * 2; got != %d {\n\t\tt.Fatalf(\"Count*2 = %%d, want %%d\", got, %d)\n\t}\n\tif !strings.HasPrefix(r.Name, \"n\") {\n\t\tt.Error(fmt.Sprint(r))\n\t}\n}\n\n",
				i, j, i, fmt.Sprintf("n%d", j), j, 2*j, 2*j)
		case r.IntN(8) == 0:
			fmt.Fprintf(&b, "// Todo%d is not written yet.\nfunc Todo%d(r *Record%d) error {\n\tpanic(\"not implemented\")\n}\n\n", j, j, i)
		default:
			fmt.Fprintf(&b, "// Step%d updates r.\nfunc (r *Record%d) Step%d(words []string) int {\n\tn := 0\n\tfor _, w := range words {\n\t\tif strings.Contains(w, %q) {\n\t\t\tr.Tags = append(r.Tags, w)\n\t\t\tn++\n\t\t}\n\t}\n\tr.Count += n\n\tfmt.Println(r.Name, n)\n\treturn n\n}\n\n",
				j, i, j, strconv.Itoa(r.IntN(100)))
		}
	}
	return b.String()
}

func benchPyFile(r *rand.Rand, i, lines int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\"\"\"Module %d, generated for a benchmark.\"\"\"\n\nimport os\nimport re\n\n\nclass Store%d:\n    def __init__(self, root):\n        self.root = root\n        self.items = {}\n", i, i)
	for j := range 2 + r.IntN(6) {
		fmt.Fprintf(&b, "\n    def method_%d(self, key, value=None):\n        \"\"\"Store value under key.\"\"\"\n        if value is None:\n            return self.items.get(key)\n        self.items[key] = value\n        return value\n", j)
	}
	for j := 0; strings.Count(b.String(), "\n") < lines; j++ {
		fmt.Fprintf(&b, "\n\ndef helper_%d(path, pattern=%q):\n    found = []\n    for name in os.listdir(path):\n        if re.search(pattern, name):\n            found.append(os.path.join(path, name))\n    return sorted(found)\n", j, fmt.Sprintf("x%d", r.IntN(50)))
	}
	return b.String()
}
