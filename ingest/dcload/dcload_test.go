package dcload

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/outagewatch/outagewatch/ingest"
	"github.com/outagewatch/outagewatch/obs"
)

const report = `{"time": "2025-04-28T10:35:00Z", "dc": "lis01", "cpu_util": 0.9, "cpu_ms_per_s": 18000,
 "plans": {"free": 2000, "pro": 3000, "business": 5000, "enterprise": 8000}, "sli_p95_ms": 18.2}`

const reportTime = 1745836500 * int64(1e9)

func TestDecodeReport(t *testing.T) {
	d := NewDecoder()
	var out obs.Slice
	if err := d.Decode([]byte(report), &out); err != nil {
		t.Fatal(err)
	}
	want := obs.Slice{
		{Time: reportTime, Signal: CPUUtil, Entity: "dc:lis01", Value: 0.9},
		{Time: reportTime, Signal: CPUms, Entity: "dc:lis01", Value: 18000},
		{Time: reportTime, Signal: SLIp95, Entity: "dc:lis01", Value: 18.2},
		{Time: reportTime, Signal: PlanCPUms, Entity: "dcplan:lis01/free", Value: 2000},
		{Time: reportTime, Signal: PlanCPUms, Entity: "dcplan:lis01/pro", Value: 3000},
		{Time: reportTime, Signal: PlanCPUms, Entity: "dcplan:lis01/business", Value: 5000},
		{Time: reportTime, Signal: PlanCPUms, Entity: "dcplan:lis01/enterprise", Value: 8000},
	}
	if !slices.Equal(out, want) {
		t.Fatalf("got  %v\nwant %v", out, want)
	}
	if s := d.Stats(); s != (Stats{Reports: 1, Observations: 7}) {
		t.Fatalf("stats %+v", s)
	}
}

func TestPartialReports(t *testing.T) {
	cases := []struct {
		in   string
		want obs.Slice
		unk  uint64
	}{
		{`{"time": 1745836500, "dc": "mad02", "cpu_util": 0}`,
			obs.Slice{{Time: reportTime, Signal: CPUUtil, Entity: "dc:mad02", Value: 0}}, 0},
		{`{"time": 1745836500.25, "dc": "mad02", "sli_p95_ms": 40, "cpu_util": null, "plans": {"free": null, "team": 7, "pro": 1}}`,
			obs.Slice{
				{Time: reportTime + 25e7, Signal: SLIp95, Entity: "dc:mad02", Value: 40},
				{Time: reportTime + 25e7, Signal: PlanCPUms, Entity: "dcplan:mad02/pro", Value: 1},
			}, 1},
		{`{"time": "2025-04-28T12:35:00+02:00", "dc": "par03", "cpu_ms_per_s": 1000.5, "extra": [1, {"x": 2}]}`,
			obs.Slice{{Time: reportTime, Signal: CPUms, Entity: "dc:par03", Value: 1000.5}}, 0},
	}
	for _, c := range cases {
		d := NewDecoder()
		var out obs.Slice
		if err := d.Decode([]byte(c.in), &out); err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if !slices.Equal(out, c.want) || d.Stats().UnknownPlans != c.unk {
			t.Errorf("%s:\n got %v (stats %+v)\nwant %v", c.in, out, d.Stats(), c.want)
		}
	}
}

func TestParse(t *testing.T) {
	l, err := NewDecoder().Parse([]byte(`{"time": 1745836500, "dc": "lis01", "plans": {"business": 5000}}`))
	if err != nil {
		t.Fatal(err)
	}
	if l.Time != reportTime || l.DC != "lis01" || l.PlanCPUms[Business] != 5000 ||
		!math.IsNaN(l.CPUUtil) || !math.IsNaN(l.CPUms) || !math.IsNaN(l.SLIp95ms) ||
		!math.IsNaN(l.PlanCPUms[Free]) || !math.IsNaN(l.PlanCPUms[Pro]) || !math.IsNaN(l.PlanCPUms[Enterprise]) {
		t.Fatalf("Parse = %+v", l)
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct{ in, reason string }{
		{``, "json"},
		{`{"time": 1745836500, "dc": "lis01", "cpu_util": 0.5`, "json"},
		{`{"time": 1745836500, "dc": "lis01", "cpu_util": 0.5} {}`, "json"},
		{`[1]`, "field_type"},
		{`{"time": 1745836500, "dc": "lis01", "cpu_util": "high"}`, "field_type"},
		{`{"time": 1745836500, "dc": 7, "cpu_util": 0.5}`, "field_type"},
		{`{"time": 1745836500, "dc": "lis01", "plans": [1]}`, "field_type"},
		{`{"dc": "lis01", "cpu_util": 0.5}`, "missing_field"},
		{`{"time": null, "dc": "lis01", "cpu_util": 0.5}`, "missing_field"},
		{`{"time": 1745836500, "cpu_util": 0.5}`, "missing_field"},
		{`{"time": 1745836500, "dc": "", "cpu_util": 0.5}`, "missing_field"},
		{`{"time": 1745836500, "dc": "lis/01", "cpu_util": 0.5}`, "dc"},
		{`{"time": 1745836500, "dc": "lis01"}`, "no_measurement"},
		{`{"time": 1745836500, "dc": "lis01", "plans": {"gold": 5}}`, "no_measurement"},
		{`{"time": 1745836500, "dc": "lis01", "cpu_util": 90}`, "value_range"},
		{`{"time": 1745836500, "dc": "lis01", "cpu_ms_per_s": -1}`, "value_range"},
		{`{"time": 1745836500, "dc": "lis01", "sli_p95_ms": -1}`, "value_range"},
		{`{"time": 1745836500, "dc": "lis01", "plans": {"pro": -5}}`, "value_range"},
		{`{"time": 1745836500000, "dc": "lis01", "cpu_util": 0.5}`, "time"},
		{`{"time": -1, "dc": "lis01", "cpu_util": 0.5}`, "time"},
		{`{"time": "yesterday", "dc": "lis01", "cpu_util": 0.5}`, "time"},
		{`{"time": true, "dc": "lis01", "cpu_util": 0.5}`, "field_type"},
	}
	d := NewDecoder()
	for _, c := range cases {
		var out obs.Slice
		err := d.Decode([]byte(c.in), &out)
		var ie *ingest.Error
		if !errors.As(err, &ie) || ie.Reason != c.reason || len(out) != 0 {
			t.Errorf("Decode(%.80s) = %v (%d obs), want reason %q", c.in, err, len(out), c.reason)
		}
	}
}

func TestPlanEntity(t *testing.T) {
	for p := range NumPlans {
		e := PlanEntity("lis01", p)
		dc, back, ok := ParsePlanEntity(e)
		if !ok || dc != "dc:lis01" || back != p {
			t.Errorf("ParsePlanEntity(%q) = %q %v %v", e, dc, back, ok)
		}
	}
	if PlanEntity("lis01", Business) != "dcplan:lis01/business" {
		t.Errorf("PlanEntity = %q", PlanEntity("lis01", Business))
	}
	for _, bad := range []string{"dc:lis01", "dcplan:lis01", "dcplan:/free", "dcplan:lis01/Free", "dcplan:lis01/gold", "dcplan:l:s/free"} {
		if _, _, ok := ParsePlanEntity(bad); ok {
			t.Errorf("ParsePlanEntity(%q) accepted", bad)
		}
	}
	if Free.String() != "free" || Enterprise.String() != "enterprise" || Plan(9).String() != "plan(9)" {
		t.Error("plan names")
	}
}

func TestSignalsRegistered(t *testing.T) {
	for name, want := range map[string]obs.Signal{
		"dc_cpu_util": CPUUtil, "dc_cpu_ms": CPUms, "dc_sli_p95_ms": SLIp95, "dc_plan_cpu_ms": PlanCPUms,
	} {
		s, ok := obs.Lookup(name)
		if !ok || s != want || s.Def().Agg != obs.Last || s.Def().Feed != obs.FeedDCLoad {
			t.Errorf("signal %s: %v %v %+v", name, s, ok, s.Def())
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(report))
	for _, s := range []string{
		`{"time": 1745836500, "dc": "mad02", "cpu_util": 0}`,
		`{"time": 1745836500.25, "dc": "mad02", "sli_p95_ms": 40, "plans": {"free": null, "team": 7, "pro": 1}}`,
		`{"time": "2025-04-28T12:35:00+02:00", "dc": "par03", "cpu_ms_per_s": 1e308}`,
		`{"time": 1745836500, "dc": "lis01", "cpu_util": 90}`,
		`{"time": "2025-04-28T12:35:00+02:00", "DC": "par03", "cpu_ms_per_s": 1e999}`,
		``, `{`, `null`, `{"time":1,"dc":"a","plans":{"free":1,"free":2}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		d := NewDecoder()
		var out obs.Slice
		err := d.Decode(in, &out)
		if err != nil {
			var ie *ingest.Error
			if !errors.As(err, &ie) || ie.Reason == "" || len(out) != 0 {
				t.Fatalf("error %v (%d obs)", err, len(out))
			}
			return
		}
		if len(out) == 0 {
			t.Fatal("no observations without an error")
		}
		for _, o := range out {
			k, _, err := obs.SplitEntity(o.Entity)
			if err != nil || (k != obs.KindDC && k != KindPlan) || o.Time < 0 || !(o.Value >= 0) || math.IsInf(o.Value, 0) {
				t.Fatalf("bad observation %+v", o)
			}
			if o.Signal == CPUUtil && o.Value > 1 {
				t.Fatalf("utilisation %v", o.Value)
			}
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	d := NewDecoder()
	in := []byte(report)
	var sink obs.SinkFunc = func(*obs.Observation) {}
	b.ReportAllocs()
	for b.Loop() {
		if err := d.Decode(in, sink); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reports/s")
}
