package components

// GlobMatch matches a component name against a glob where '*' is any run
// of characters and '?' any one character; '[' and ']' are literal, unlike
// path.Match, because component names contain them. --trace-path (verif)
// and switch.sl2vl_pairs (fabric) select components with it.
func GlobMatch(pattern, name string) bool {
	// Iterative matcher with one backtrack point, linear in practice.
	p, n := 0, 0
	starP, starN := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == name[n]):
			p++
			n++
		case p < len(pattern) && pattern[p] == '*':
			starP, starN = p, n
			p++
		case starP >= 0:
			p = starP + 1
			starN++
			n = starN
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
