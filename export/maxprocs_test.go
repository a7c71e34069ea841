package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExplicitMaxProcs(t *testing.T) {
	cases := []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"", -1, false},
		{"auto", -1, false},
		{" AUTO ", -1, false},
		{"0", 0, false},
		{"1", 1, false},
		{"8", 8, false},
		{"-1", 0, true},
		{"two", 0, true},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := explicitMaxProcs(c.in)
			if c.wantErr {
				require.Error(t, err)
				assert.Contains(t, err.Error(), maxProcsVar)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestAutoMaxProcs(t *testing.T) {
	cases := []struct {
		name              string
		hosts             []string
		rank, cpus, cores int
	}{
		{"2 ranks on 2 cores", []string{"a", "a"}, 1, 2, 1},
		{"4 ranks on 2 cores", []string{"a", "a", "a", "a"}, 0, 2, 1},
		{"2 of 4 ranks here, 16 cores", []string{"a", "b", "a", "b"}, 2, 16, 8},
		{"3 ranks on 8 cores", []string{"a", "a", "a"}, 0, 8, 2},
		{"8 ranks on 64 cores", []string{"a", "a", "a", "a", "a", "a", "a", "a"}, 5, 64, 8},
		{"one rank per host", []string{"a", "b"}, 0, 4, 4},
		{"locality unknown", nil, 0, 4, 4},
		{"empty host id", []string{"", ""}, 0, 4, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.cores, autoMaxProcs(c.cpus, localRanks(c.hosts, c.rank)))
		})
	}
}

func TestWantMaxProcs(t *testing.T) {
	cases := []struct {
		name                 string
		cores, threads, want int
	}{
		{"one calling thread, 1 core per rank: the floor", 1, 1, 2},
		{"loop and completion thread: one P to spare", 1, 2, 3},
		{"a third calling thread", 1, 3, 4},
		{"cores per rank above the threads", 8, 2, 8},
		{"bounded", 1, 100, maxAutoMaxProcs},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, wantMaxProcs(c.cores, c.threads))
		})
	}
}

// fakeRuntime stands in for the C thread count, GOMAXPROCS and the timer of
// the shrink windows, which the test ends by hand.
type fakeRuntime struct {
	live, procs int
	windows     []func()
}

func (f *fakeRuntime) policy() *procPolicy {
	return &procPolicy{
		live: func() int { return f.live },
		gomaxprocs: func(n int) int {
			old := f.procs
			if n > 0 {
				f.procs = n
			}
			return old
		},
		after: func(_ time.Duration, fn func()) { f.windows = append(f.windows, fn) },
	}
}

// A step of TestProcPolicy: comm (a communicator's init with n cores per
// rank), enter (n threads call in for the first time), exit (n threads
// exit, and a call tells Go) or window (the running shrink window ends);
// then GOMAXPROCS is procs and windows shrink windows are running.
type procStep struct {
	do             string
	n              int
	procs, windows int
}

func TestProcPolicy(t *testing.T) {
	const runtimeDefault = 8
	cases := []struct {
		name  string
		steps []procStep
	}{
		{"one thread stays at the floor", []procStep{
			{"enter", 1, runtimeDefault, 0},
			{"comm", 1, 2, 0},
		}},
		{"threads within the cores per rank stay at the cores", []procStep{
			{"enter", 1, runtimeDefault, 0},
			{"comm", 8, 8, 0},
			{"enter", 3, 8, 0},
			{"exit", 3, 8, 1},
			{"window", 0, 8, 0},
		}},
		{"many threads: up to the cap, down once they exit", []procStep{
			{"enter", 1, runtimeDefault, 0},
			{"comm", 1, 2, 0},
			{"enter", 40, maxAutoMaxProcs, 0},
			{"exit", 40, maxAutoMaxProcs, 1},
			{"window", 0, 2, 0},
		}},
		{"exits spread over a window: down over two", []procStep{
			{"enter", 1, runtimeDefault, 0},
			{"comm", 1, 2, 0},
			{"enter", 5, 7, 0},
			{"exit", 1, 7, 1},
			{"exit", 4, 7, 1},
			{"window", 0, 6, 1},
			{"window", 0, 2, 0},
		}},
		{"a thread that comes and goes in every window keeps its P", []procStep{
			{"enter", 1, runtimeDefault, 0},
			{"comm", 1, 2, 0},
			{"enter", 1, 3, 0},
			{"exit", 1, 3, 1},
			{"enter", 1, 3, 1},
			{"exit", 1, 3, 1},
			{"window", 0, 3, 1},
			{"enter", 1, 3, 1},
			{"exit", 1, 3, 1},
			{"window", 0, 3, 1},
			{"window", 0, 2, 0},
		}},
		{"threads that exited before the first communicator", []procStep{
			{"enter", 5, runtimeDefault, 0},
			{"exit", 4, runtimeDefault, 0},
			{"comm", 1, 6, 1},
			{"window", 0, 2, 0},
		}},
		{"a subgroup with fewer local ranks keeps the lower cores", []procStep{
			{"enter", 1, runtimeDefault, 0},
			{"comm", 1, 2, 0},
			{"comm", 4, 2, 0},
		}},
		{"without a communicator GOMAXPROCS is left alone", []procStep{
			{"enter", 40, runtimeDefault, 0},
			{"exit", 40, runtimeDefault, 0},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeRuntime{procs: runtimeDefault}
			p := f.policy()
			for i, s := range c.steps {
				switch s.do {
				case "comm":
					p.apply(s.n)
				case "enter":
					for range s.n {
						f.live++
						p.threadEntered()
					}
				case "exit":
					f.live -= s.n
					p.threadsExited()
				case "window":
					require.NotEmpty(t, f.windows, "step %d: no shrink window is running", i)
					end := f.windows[0]
					f.windows = f.windows[1:]
					end()
				default:
					t.Fatalf("step %d: unknown step %q", i, s.do)
				}
				assert.Equal(t, s.procs, f.procs, "step %d (%s %d): GOMAXPROCS", i, s.do, s.n)
				assert.Len(t, f.windows, s.windows, "step %d (%s %d): shrink windows running", i, s.do, s.n)
			}
		})
	}
}
