package dnsin

import "os"

func openFile(path string) (*os.File, error)   { return os.Open(path) }
func readTestFile(path string) ([]byte, error) { return os.ReadFile(path) }
