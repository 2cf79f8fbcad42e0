// Package errlist is a list of problems of one type that is itself an
// error: the config's field errors and the planner's manifest errors are
// such lists. It only joins and unwraps; it does not sort or deduplicate
// (each list's owner orders its problems).
package errlist
