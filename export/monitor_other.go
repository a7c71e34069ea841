//go:build !linux

package main

import (
	"errors"
	"time"
)

var errNoThreads = errors.New("per-thread priorities need Linux")

func findMonitor(time.Duration, time.Duration) int { return 0 }
func setThreadNice(int, int) error                 { return errNoThreads }
func threadNice(int) (int, error)                  { return 0, errNoThreads }
