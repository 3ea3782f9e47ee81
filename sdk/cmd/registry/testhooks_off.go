//go:build !testhooks

package main

// The shipped command: no failpoint, no profiles (testhooks.go).

const failpoint = ""

func die() {}

func startProfiles() (stop func()) { return func() {} }
