package hier

// RoundCuts are the bounds of the rounds of n elements of es bytes.
func RoundCuts(n, es, roundBytes int) []int { return roundCuts(n, es, roundBytes) }
