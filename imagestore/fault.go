package imagestore

import "fmt"

// Steps at which a fault hook runs.
const (
	// StepWritten: Put has written and synced the temporary file, before the rename.
	StepWritten = "written"
	// StepRenamed: Put has renamed the file to its final name, before the directory
	// sync.
	StepRenamed = "renamed"
	// StepRemove: Remove has validated the path, before deleting the file.
	StepRemove = "remove"
)

// SetFaultHook is for tests only: from now on, at each step (StepWritten, StepRenamed,
// StepRemove) h is called, and a non-nil error makes the operation fail there with
// that error, cleaning up as a real failure would. It lets tests of callers check that
// a failure between steps leaves the previous image intact. A nil h removes the hook;
// it is nil in production. Safe to call while the store is in use.
func (s *Store) SetFaultHook(h func(step string) error) {
	if h == nil {
		s.fault.Store(nil)
		return
	}
	s.fault.Store(&h)
}

// injectFault runs the fault hook, if any, for step.
func (s *Store) injectFault(step string) error {
	h := s.fault.Load()
	if h == nil {
		return nil
	}
	if err := (*h)(step); err != nil {
		return fmt.Errorf("image store fault at step %s: %w", step, err)
	}
	return nil
}
