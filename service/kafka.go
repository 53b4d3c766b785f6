package service

// tp names one topic partition.
type tp struct {
	topic string
	part  int32
}
