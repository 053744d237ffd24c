package cli

import (
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/gardend/gardend/store"
)

// logsTable prints logs; every text from the database goes through printable, the
// title cut to a readable width.
func logsTable(tw io.Writer, logs []store.Log) {
	_, _ = fmt.Fprintln(tw, "ID\tGARDEN\tTYPE\tSTATUS\tAT\tBED\tPLANT\tQUANTITY\tAUTHOR\tASSIGNEE\tPHOTOS\tTITLE")
	for _, l := range logs {
		bed, plant, q, assignee := "-", "-", "-", "-"
		if l.Bed != nil {
			bed = strconv.FormatUint(*l.Bed, 10)
			if l.BedRemoved {
				bed += " (removed)"
			}
		}
		if l.Plant != nil {
			plant = printable(*l.Plant)
		}
		if l.Quantity != nil {
			q = strconv.FormatFloat(l.Quantity.Value, 'f', -1, 64) + " " + printable(l.Quantity.Unit)
		}
		if l.Assignee != nil {
			assignee = printable(*l.Assignee)
		}
		_, _ = fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", l.ID, l.Garden, printable(string(l.Type)),
			printable(string(l.Status)), stamp(l.At), bed, plant, q, printable(l.Author), assignee, len(l.Photos), printable(cut(l.Title, 60)))
	}
}

func photosTable(tw io.Writer, photos []store.Photo) {
	_, _ = fmt.Fprintln(tw, "ID\tLOG\tGARDEN\tTYPE\tPIXELS\tBYTES\tPATH\tTHUMBNAIL\tCREATED")
	for _, p := range photos {
		thumb := "-"
		if p.ThumbPath != "" {
			thumb = printable(p.ThumbPath)
		}
		_, _ = fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%d×%d\t%d\t%s\t%s\t%s\n", p.ID, p.Log, p.Garden, printable(p.ContentType),
			p.Width, p.Height, p.Size+p.ThumbSize, printable(p.Path), thumb, stamp(p.Created))
	}
}

// cut shortens s to n characters, marking the cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
