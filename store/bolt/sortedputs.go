package bolt

import (
	"bytes"
	"slices"

	bbolt "go.etcd.io/bbolt"
)

// sortedPuts collects the writes of a bucket to make them at once, in key order.
//
// bbolt splits a node only when its transaction commits: within one transaction,
// keys written in random order into a bucket that grows all land in the same few
// nodes, and each insertion shifts the node's entries, so a transaction that writes
// millions of index entries (an import of a large logbook: some 25 per log) takes
// quadratic time. Written in key order, every insertion appends. The pairs are kept
// in one arena, 8 bytes of overhead each.
type sortedPuts struct {
	arena []byte
	// starts[i] is where pair i begins: key length (2 bytes), key, value.
	starts []uint32
}

func (p *sortedPuts) add(key, value []byte) {
	p.starts = append(p.starts, uint32(len(p.arena)))
	p.arena = append(p.arena, byte(len(key)>>8), byte(len(key)))
	p.arena = append(p.arena, key...)
	p.arena = append(p.arena, value...)
	p.starts = append(p.starts, uint32(len(p.arena))) // the end, as the pair's second entry
}

func (p *sortedPuts) pair(i int) (key, value []byte) {
	start, end := p.starts[2*i], p.starts[2*i+1]
	n := uint32(p.arena[start])<<8 | uint32(p.arena[start+1])
	return p.arena[start+2 : start+2+n], p.arena[start+2+n : end]
}

// flush writes every pair into b in key order.
func (p *sortedPuts) flush(b *bbolt.Bucket) error {
	order := make([]int, len(p.starts)/2)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, c int) int {
		ka, _ := p.pair(a)
		kc, _ := p.pair(c)
		return bytes.Compare(ka, kc)
	})
	for _, i := range order {
		k, v := p.pair(i)
		if v == nil {
			v = present
		}
		if err := b.Put(k, v); err != nil {
			return err
		}
	}
	p.arena, p.starts = nil, nil
	return nil
}
