package env

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseGoTestJSON(t *testing.T) {
	out := `{"Action":"start","Package":"m/a"}
{"Action":"run","Package":"m/a","Test":"TestOK"}
{"Action":"run","Package":"m/a","Test":"TestOK/sub"}
{"Action":"pass","Package":"m/a","Test":"TestOK/sub","Elapsed":0}
{"Action":"pass","Package":"m/a","Test":"TestOK","Elapsed":0.5}
{"Action":"run","Package":"m/a","Test":"TestBad"}
{"Action":"fail","Package":"m/a","Test":"TestBad","Elapsed":0.1}
{"Action":"fail","Package":"m/a","Elapsed":0.7}
{"Action":"run","Package":"m/h","Test":"TestHang"}
{"Action":"output","Package":"m/h","Test":"TestHang","Output":"panic: test timed out after 2s\n"}
{"Action":"fail","Package":"m/h","Elapsed":2}
{"ImportPath":"m/b","Action":"build-fail"}
{"Action":"output","Package":"m/b","Output":"FAIL\tm/b [build failed]\n"}
{"Action":"fail","Package":"m/b","Elapsed":0}
not json
{"Action":"run","Package":"m/t","Test":"TestOK"}
{"Action":"pass","Package":"m/t","Test":"TestOK"}
{"Action":"run","Package":"m/t","Test":"TestSpin"}
{"Action":"output","Package":"m/t","Test":"TestSpin","Output":"panic: test timed out after 2.5s\n"}
{"Action":"output","Package":"m/t","Test":"TestSpin","Output":"\trunning tests:\n"}
{"Action":"fail","Package":"m/t","Test":"TestSpin"}
{"Action":"run","Package":"m/c","Test":"TestCrash"}
{"Action":"fail","Package":"m/c","Elapsed":0.1}
`
	r := ParseGoTestJSON([]byte(out))
	want := map[string]Result{
		"m/a TestOK":    {Pass, 0.5},
		"m/a TestBad":   {Fail, 0.1},
		"m/h TestHang":  {Hung, 0},
		"m/c TestCrash": {Fail, 0},
		"m/t TestOK":    {Pass, 0},
		"m/t TestSpin":  {Hung, 0}, // test2json on a binary: a fail event after the panic
	}
	if !strings.Contains(r.Output["m/h TestHang"], "timed out") {
		t.Errorf("output %q", r.Output)
	}
	if !reflect.DeepEqual(r.Tests, want) {
		t.Errorf("tests %v, want %v", r.Tests, want)
	}
	wantBroken := map[string]string{"m/h": "timed out", "m/t": "timed out", "m/b": "build failed"}
	if !reflect.DeepEqual(r.Broken, wantBroken) {
		t.Errorf("broken %v, want %v", r.Broken, wantBroken)
	}
	if p, n := SplitID("m/a TestOK"); p != "m/a" || n != "TestOK" {
		t.Errorf("SplitID: %q %q", p, n)
	}
}
