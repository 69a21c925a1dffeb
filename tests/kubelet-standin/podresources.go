package main

import "errors"

// runPodResources: to be written with the exporter.
func runPodResources(args []string) error { return errors.New("not implemented yet") }
