package tb

// T is the part of testing.TB the launchers use.
type T interface {
	Helper()
	Failed() bool
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	Cleanup(func())
	TempDir() string
}

// Runner is the part of *testing.M a TestMain helper uses.
type Runner interface{ Run() int }
