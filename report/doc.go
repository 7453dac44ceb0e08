// Package report presents results: the table on stdout, results.json and
// results.csv, and the plots of a sweep. It is the output contract of
// docs/metrics.md:
//
//	{"tool":"hcasim","version":…,"config":…,"seed":…,"points":[{"params":{…},"metrics":{…}}]}
//
// A single run is one point; params holds the dotted config keys that define
// it. Metric names are snake_case with the unit in the name. Floats are
// rounded to 9 significant digits so that outputs are byte-identical across
// machines even where a platform fuses multiply-adds.
package report
