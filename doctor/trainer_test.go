package doctor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frognano/frognano/finetune/trainer"
)

func TestTrainerCheckReadsTheStamp(t *testing.T) {
	t.Setenv("FROGNANO_CACHE", t.TempDir())
	t.Setenv("FROGNANO_TRAINER_PYTHON", "")
	if r := checkTrainer(context.Background(), nil); r.Status != Info || !strings.Contains(r.Fix, "frognano finetune setup") {
		t.Fatalf("not set up: %+v", r)
	}
	venv := trainer.VenvDir()
	os.MkdirAll(filepath.Join(venv, "bin"), 0o755)
	os.WriteFile(filepath.Join(venv, "bin", "python"), nil, 0o755)
	stamp := func(hash string) {
		b, _ := json.Marshal(trainer.Found{LockSHA256: hash, Hello: trainer.Hello{Python: "3.11.7", Torch: "2.11.0", Device: "cpu", DType: "float32"}})
		os.WriteFile(filepath.Join(venv, "frognano-setup.json"), b, 0o644)
	}
	stamp(trainer.LockHash())
	if r := checkTrainer(context.Background(), nil); r.Status != OK || !strings.Contains(r.Verdict, "torch 2.11.0") {
		t.Fatalf("set up: %+v", r)
	}
	stamp("older")
	if r := checkTrainer(context.Background(), nil); r.Status != Warn || !strings.Contains(r.Verdict, "other pins") {
		t.Fatalf("old pins: %+v", r)
	}
	t.Setenv("FROGNANO_TRAINER_PYTHON", "/nonexistent/python")
	if r := checkTrainer(context.Background(), nil); r.Status != Warn {
		t.Fatalf("missing override: %+v", r)
	}
}
