package service

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A checkpoint asked of one of two instances writes the snapshots of the
// stage-two partitions the other holds too: their changelog partitions
// grow and the other's snapshot cache appears, and the answer names every
// partition of the internal topic, each instance with its own.
func TestStagedCheckpointWholeDeployment(t *testing.T) {
	f := loadFixture(t)
	c := startBroker(t, 0, "", f.topicNames()...)
	defer c.Close()
	addr := c.ListenAddrs()[0]
	var in = f.recs[:0:0]
	for _, r := range f.recs {
		if r.Time >= raceFrom && r.Time < raceFrom+int64(6*time.Hour) {
			in = append(in, r)
		}
	}
	produceStreams(t, addr, f.topics, in)
	t.Setenv("OUTAGEWATCH_TEST_TOKEN", "tok")
	var bases, dirs []string
	var sts []*Staged
	for i := range 2 {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("instance-%d", i))
		cfg := stagedConfig(childSpec{Broker: addr, Dir: dir, Stage: StageBoth, Topics: f.topics})
		cfg.HTTP.TokenEnv = "OUTAGEWATCH_TEST_TOKEN"
		// No checkpoint of their own: every snapshot is the request's.
		cfg.CheckpointInterval = time.Hour
		base, st, stop := runStagedObj(t, cfg, quietLog())
		defer stop()
		bases, dirs, sts = append(bases, base), append(dirs, dir), append(sts, st)
	}
	n := sts[0].cfg.Kafka.InternalPartitions
	waitFor(t, "the stage-two partitions shared, each with buckets closed", waitLong, func() bool {
		a, b := len(sts[0].status.held()), len(sts[1].status.held())
		return a > 0 && b > 0 && a+b == n && sts[0].dataTime().After(time.Unix(0, raceFrom)) && sts[1].dataTime().After(time.Unix(0, raceFrom))
	})
	changelog := sts[0].cfg.Kafka.ChangelogTopic
	before, err := sts[0].highWatermarks(context.Background(), []string{changelog})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range before {
		if v != 0 {
			t.Fatalf("changelog %v at %d before the request; the test needs no snapshot yet", k, v)
		}
	}

	if code, _ := apiDo(t, bases[0], "POST", "/api/v1/checkpoint", "", ""); code != http.StatusUnauthorized {
		t.Fatalf("checkpoint without a token: %d", code)
	}
	code, body := apiDo(t, bases[0], "POST", "/api/v1/checkpoint", "tok", "")
	var cp DeploymentCheckpoint
	if code != http.StatusOK || json.Unmarshal([]byte(body), &cp) != nil {
		t.Fatalf("checkpoint: %d %s", code, body)
	}
	all := []int{0, 1, 2, 3}
	if !cp.Complete || !slices.Equal(cp.Partitions, all) || !slices.Equal(cp.Written, all) || len(cp.Missing) != 0 ||
		cp.StageOneInstances != 2 || cp.StageOneWritten != 2 {
		t.Fatalf("checkpoint answer: %s", body)
	}
	byInstance := map[string][]int{}
	for _, a := range cp.Instances {
		if a.Error != "" || !a.StageOne {
			t.Fatalf("instance %s answered %+v", a.Instance, a)
		}
		byInstance[a.Instance] = a.StageTwo
	}
	partsB := byInstance[sts[1].ctl.instance]
	if len(cp.Instances) != 2 || len(partsB) == 0 || len(byInstance[sts[0].ctl.instance]) == 0 {
		t.Fatalf("want an answer from each instance, each with partitions: %s", body)
	}
	after, err := sts[0].highWatermarks(context.Background(), []string{changelog})
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range partsB {
		if k := (tp{changelog, int32(part)}); after[k] <= before[k] {
			t.Errorf("partition %d held by B: changelog at %d, as before the request", part, after[k])
		}
		if _, err := os.Stat(filepath.Join(dirs[1], "stage2", fmt.Sprint(part)+".snapshot")); err != nil {
			t.Errorf("partition %d held by B: no snapshot cache: %v", part, err)
		}
		if _, err := os.Stat(filepath.Join(dirs[0], "stage2", fmt.Sprint(part)+".snapshot")); err == nil {
			t.Errorf("partition %d held by B: a snapshot cache in A's data dir", part)
		}
	}
}

// With no instance running stage two, a checkpoint answers once its wait
// is over, naming every partition as missing; stage one answered.
func TestStagedCheckpointTimesOut(t *testing.T) {
	f := loadFixture(t)
	c := startBroker(t, 0, "", f.topicNames()...)
	defer c.Close()
	t.Setenv("OUTAGEWATCH_TEST_TOKEN", "tok")
	cfg := stagedConfig(childSpec{Broker: c.ListenAddrs()[0], Dir: t.TempDir(), Stage: StageOne, Topics: f.topics})
	cfg.HTTP.TokenEnv = "OUTAGEWATCH_TEST_TOKEN"
	base, st, stop := startStagedAs(t, cfg, Options{Rules: f.set, Map: f.m}, StageOne)
	defer stop()
	waitFor(t, "stage one in its group", waitLong, func() bool { return st.status.assigned[0].Load() })
	if code, body := apiDo(t, base, "POST", "/api/v1/checkpoint?wait=forever", "tok", ""); code != http.StatusBadRequest {
		t.Fatalf("checkpoint?wait=forever: %d %s", code, body)
	}
	var code int
	var body string
	var cp DeploymentCheckpoint
	waitFor(t, "a stage-one answer", waitLong, func() bool {
		code, body = apiDo(t, base, "POST", "/api/v1/checkpoint?wait=1s", "tok", "")
		return json.Unmarshal([]byte(body), &cp) == nil && len(cp.Instances) == 1 && cp.Instances[0].StageOne
	})
	if code != http.StatusGatewayTimeout || cp.Complete || !slices.Equal(cp.Missing, []int{0, 1, 2, 3}) || len(cp.Written) != 0 ||
		cp.StageOneInstances != 1 || cp.StageOneWritten != 1 {
		t.Fatalf("checkpoint with no stage two anywhere: %d %s", code, body)
	}
}
