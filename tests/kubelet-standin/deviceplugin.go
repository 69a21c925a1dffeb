package main

import "errors"

// runDevicePlugin: to be written with the device plugin.
func runDevicePlugin(args []string) error { return errors.New("not implemented yet") }
