package packwheel_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// snippetSource is the first line of every Go snippet in README.md: the
// command that runs the Example it comes from.
var snippetSource = regexp.MustCompile(`^// runnable: go test -run '\^(Example\w*)\$' -v (\.|\./[\w/]+)$`)

// TestReadmeSnippets keeps README.md's Go snippets from rotting: each must
// name, in its first line, a runnable Example (one with an Output
// comment), and its lines of code must appear, in order, in the file that
// holds that Example, so that they compile and run there. Comments and
// layout may differ; lines the snippet leaves out (set-up, the example's
// client) may lie between. A whole program (package main) is
// TestReadmeMain's.
func TestReadmeSnippets(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	snippets := goSnippets(string(readme))
	require.NotEmpty(t, snippets)
	for _, sn := range snippets {
		if isProgram(t, sn) {
			continue
		}
		t.Run(fmt.Sprintf("README.md:%d", sn.line), func(t *testing.T) {
			first, body, _ := strings.Cut(sn.text, "\n")
			m := snippetSource.FindStringSubmatch(first)
			require.NotNil(t, m, "a Go snippet must start with %q, naming the Example that runs it; this one starts %q",
				"// runnable: go test -run '^ExampleName$' -v ./dir", first)
			file, err := exampleFile(m[2], m[1])
			require.NoError(t, err)
			src, err := os.ReadFile(file)
			require.NoError(t, err)
			want, err := codeLines(body)
			require.NoError(t, err)
			have, err := codeLines(string(src))
			require.NoError(t, err, file)
			i := 0
			for _, line := range want {
				for i < len(have) && have[i] != line {
					i++
				}
				if i == len(have) {
					t.Fatalf("the snippet's line\n\t%s\nis not in %s after the lines before it", line, file)
				}
				i++
			}
		})
	}
}

// TestReadmeMain builds README.md's whole program ("Using it in your
// module") as the file stands, a package of its own importing packwheel's
// idleconn and gnet, against this module and the gnet version it
// requires. The package exists only in the build's overlay, so nothing is
// written into the tree.
func TestReadmeMain(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	var programs []snippet
	for _, sn := range goSnippets(string(readme)) {
		if isProgram(t, sn) {
			programs = append(programs, sn)
		}
	}
	require.Len(t, programs, 1, "README.md has one whole program")
	root, err := os.Getwd()
	require.NoError(t, err)
	pkg := filepath.Join(root, "internal", "readmemain")
	require.NoDirExists(t, pkg, "the overlay's package must not exist on disk")
	dir := t.TempDir()
	src, overlay := filepath.Join(dir, "main.go"), filepath.Join(dir, "overlay.json")
	require.NoError(t, os.WriteFile(src, []byte(programs[0].text), 0o644))
	replace, err := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(pkg, "main.go"): src}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(overlay, replace, 0o644))
	build := exec.Command("go", "build", "-overlay", overlay, "-o", filepath.Join(dir, "main"), "./internal/readmemain")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "README.md:%d: the program does not build:\n%s", programs[0].line, out)
}

// isProgram reports whether sn is a whole program: its first line of code
// is "package main".
func isProgram(t *testing.T, sn snippet) bool {
	lines, err := codeLines(sn.text)
	require.NoError(t, err, "README.md:%d", sn.line)
	return len(lines) > 0 && lines[0] == "package main"
}

// snippet is a fenced Go block of README.md.
type snippet struct {
	line int // of its first line of code
	text string
}

// goSnippets returns the ```go blocks of markdown.
func goSnippets(markdown string) []snippet {
	var out []snippet
	var cur *strings.Builder
	start := 0
	for n, line := range strings.Split(markdown, "\n") {
		switch {
		case cur == nil && line == "```go":
			cur, start = new(strings.Builder), n+2
		case cur != nil && line == "```":
			out = append(out, snippet{start, cur.String()})
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	return out
}

// exampleFile returns the file of the test files in dir that declares the
// Example name, if it is runnable.
func exampleFile(dir, name string) (string, error) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return "", err
	}
	var files []*ast.File
	for _, p := range paths {
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return "", err
		}
		files = append(files, f)
	}
	for _, ex := range doc.Examples(files...) {
		if "Example"+ex.Name != name {
			continue
		}
		if ex.Output == "" && !ex.EmptyOutput {
			return "", fmt.Errorf("%s in %s has no Output comment: go test compiles it but never runs it", name, dir)
		}
		return fset.Position(ex.Code.Pos()).Filename, nil
	}
	return "", fmt.Errorf("no %s in the test files of %s", name, dir)
}

// codeLines returns src's lines of Go code as their tokens, joined by
// spaces: comments, blank lines and layout left out.
func codeLines(src string) ([]string, error) {
	fset := token.NewFileSet()
	file := fset.AddFile("", -1, len(src))
	var errs scanner.ErrorList
	var s scanner.Scanner
	s.Init(file, []byte(src), func(pos token.Position, msg string) { errs.Add(pos, msg) }, 0)
	var lines []string
	var cur []string
	curLine := 0
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.SEMICOLON && lit == "\n" {
			continue // inserted at a line's end
		}
		if l := fset.Position(pos).Line; l != curLine {
			if cur != nil {
				lines = append(lines, strings.Join(cur, " "))
			}
			cur, curLine = nil, l
		}
		if lit == "" {
			lit = tok.String()
		}
		cur = append(cur, lit)
	}
	if cur != nil {
		lines = append(lines, strings.Join(cur, " "))
	}
	return lines, errs.Err()
}
