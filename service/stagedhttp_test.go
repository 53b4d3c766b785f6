package service

import (
	"strings"
	"testing"
	"time"

	"github.com/outagewatch/outagewatch/partial"
	"github.com/outagewatch/outagewatch/pipeline"
	"github.com/outagewatch/outagewatch/stage"
)

// A stage-two partition whose buckets wait on a source that stopped
// flushing while another went on makes the process not ready, naming the
// partition and the source, once that has lasted longer than a live holder
// would take; ready again when the source catches up.
func TestStagedReadyNamesStalledSource(t *testing.T) {
	s := &Staged{cfg: &Config{CheckpointInterval: time.Second, Kafka: KafkaConfig{SessionTimeout: time.Second}},
		two: true, log: quietLog(), status: newStagedStatus()}
	s.status.assigned[1].Store(true)
	p, err := pipeline.New(pipeline.Config{Logger: quietLog()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sources := []string{"flows/0", "flows/1"}
	task := stage.NewTask(p, sources)
	st := &stageTwo{s: s, sources: sources, tasks: map[int]*s2Part{3: {part: 3, task: task}}}
	mark := func(src string, through int64) {
		if err := task.Apply(&partial.Record{Version: partial.Version, Marker: &partial.Marker{Source: src, Through: through}}); err != nil {
			t.Fatal(err)
		}
	}
	mark("flows/0", 600e9)
	mark("flows/1", 300e9)
	now := time.Now()
	st.watchStalls(now)
	st.watchStalls(now.Add(2 * time.Second))
	if ok, why := s.Ready(); !ok {
		t.Fatalf("not ready before the limit: %s", why)
	}
	st.watchStalls(now.Add(4 * time.Second))
	ok, why := s.Ready()
	if ok || !strings.Contains(why, "3 (flows/1)") {
		t.Fatalf("ready %v, %q; want not ready naming partition 3 and flows/1", ok, why)
	}
	mark("flows/1", 600e9)
	st.watchStalls(now.Add(5 * time.Second))
	if ok, why := s.Ready(); !ok {
		t.Fatalf("not ready after the source caught up: %s", why)
	}
}
