package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What a journal says of each row, whatever state a kill left it in.
func TestJournalStates(t *testing.T) {
	const src = "/data/rows.csv"
	header := journalHeader + "batch=10 " + src + "\n"
	for _, tc := range []struct {
		name     string
		content  string
		size     int
		finished []int
		waiting  map[int]string
		fresh    []int
		wantErr  string
	}{
		{name: "new journal", content: "", size: 10, fresh: []int{1, 2}},
		{name: "batch line", content: header + "b 1 1 2 3=act-3\n", size: 10, finished: []int{1, 2}, waiting: map[int]string{3: "act-3"}, fresh: []int{4}},
		{name: "document recorded later", content: header + "b 1 3=act-3\n3\n", size: 10, finished: []int{3}},
		{name: "torn batch line is ignored", content: header + "b 1 1 2\nb 11 11 12 1", size: 10, finished: []int{1, 2}, fresh: []int{11, 12, 13}},
		{name: "the journal's batch size holds", content: journalHeader + "batch=7 " + src + "\n", size: 7},
		{name: "version 1 rows are finished", content: journalHeaderV1 + src + "\n4\n5\n", size: 10, finished: []int{4, 5}, fresh: []int{1}},
		{name: "another file's journal", content: journalHeader + "batch=10 /other.csv\n", wantErr: "belongs to /other.csv"},
		{name: "not a journal", content: "hello\n", wantErr: "not an import journal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j")
			if tc.content != "" {
				if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			j, err := openJournal(path, src, 10)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer j.close()
			if j.size != tc.size {
				t.Errorf("batch size %d, want %d", j.size, tc.size)
			}
			for _, n := range tc.finished {
				if s, _ := j.state(n); s != rowFinished {
					t.Errorf("row %d: state %d, want finished", n, s)
				}
			}
			for n, id := range tc.waiting {
				if s, got := j.state(n); s != rowWaiting || got != id {
					t.Errorf("row %d: state %d %q, want waiting for %q", n, s, got, id)
				}
			}
			for _, n := range tc.fresh {
				if s, _ := j.state(n); s != rowNew {
					t.Errorf("row %d: state %d, want new", n, s)
				}
			}
		})
	}
}

// Appends after a torn line start a line of their own, and a journal
// written and read again says the same.
func TestJournalAppendsAfterATornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	const src = "/data/rows.csv"
	if err := os.WriteFile(path, []byte(journalHeader+"batch=5 "+src+"\nb 1 1 2=a2\nb 6 6 7"), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := openJournal(path, src, 5)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.batchDone(6, []int{6, 7}, map[int]string{8: "a8"}); err != nil {
		t.Fatal(err)
	}
	if err := j.rowDone(2); err != nil {
		t.Fatal(err)
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if want := journalHeader + "batch=5 " + src + "\nb 1 1 2=a2\nb 6 6 7 8=a8\n2\n"; string(raw) != want {
		t.Errorf("journal:\n%s\nwant:\n%s", raw, want)
	}
	j, err = openJournal(path, src, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	for n, want := range map[int]rowState{1: rowFinished, 2: rowFinished, 6: rowFinished, 7: rowFinished, 8: rowWaiting, 9: rowNew} {
		if s, _ := j.state(n); s != want {
			t.Errorf("row %d: state %d, want %d", n, s, want)
		}
	}
}
