package service

import "testing"

// The sample for running on the host talks to the compose Kafka's host
// listener and keeps its state outside the repository.
func TestHostConfig(t *testing.T) {
	c, err := LoadConfig("../deploy/outagewatch.host.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Kafka.Brokers[0] != "localhost:9094" || c.DataDir != "/tmp/outagewatch" || c.HTTP.Listen != DefaultListen ||
		c.Sinks[0].Path != "/tmp/outagewatch/alerts.jsonl" || c.resolve(c.Map) != "../deploy/map.yaml" {
		t.Errorf("%+v", c)
	}
}
