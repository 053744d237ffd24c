package spatial

import "context"

// BedResult is one bed of a Beds call: Index is its position in the input.
type BedResult struct {
	Index int
	Bed   Bed
	Err   error
}

// maxBedsInProgress bounds the beds one Beds call reads at once, in input order: a
// garden of a few hundred beds does not start a few hundred goroutines and detail
// calls at once, and the beds that are streamed next are the ones being read.
const maxBedsInProgress = 64

// Beds reads the beds concurrently (at most maxBedsInProgress at once, started in
// input order) and delivers them in input order, each as soon as it and every earlier
// one are done, so a caller can stream them out in order. A slow or failing bed holds
// back the later ones only until its calls' deadlines. The channel is closed after
// the last bed, or promptly once ctx is cancelled (outstanding calls are cancelled
// then). It is buffered for every bed, so a caller may stop reading at any time
// without leaking goroutines.
func (c *Client) Beds(ctx context.Context, projectUUIDs []string) <-chan BedResult {
	out := make(chan BedResult, len(projectUUIDs))
	slots := make([]chan BedResult, len(projectUUIDs))
	for i := range slots {
		slots[i] = make(chan BedResult, 1)
	}
	window := make(chan struct{}, maxBedsInProgress)
	go func() {
		for i, uuid := range projectUUIDs {
			select {
			case window <- struct{}{}:
			case <-ctx.Done():
				return
			}
			go func() {
				b, err := c.Bed(ctx, uuid)
				<-window
				slots[i] <- BedResult{Index: i, Bed: b, Err: err}
			}()
		}
	}()
	go func() {
		defer close(out)
		for _, slot := range slots {
			select {
			case r := <-slot:
				out <- r // never blocks: out has room for every bed
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
