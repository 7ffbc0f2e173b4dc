package memory

// Dates.

// numericDateAt reads a date starting with the run of n digits at i:
// 2026-11-30, 2026/11/30 or 30 November 2026. The digits must not continue
// a number, as in 12026-11-30 or 1.30 November 2026.
func numericDateAt(text string, i, n int) (entitySpan, bool) {
	if i > 0 && (isDigitASCII(text[i-1]) || text[i-1] == '.' && i > 1 && isDigitASCII(text[i-2])) {
		return entitySpan{}, false
	}
	switch n {
	case 4:
		return isoDateAt(text, i)
	case 1, 2:
		return dayFirstDateAt(text, i, n)
	}
	return entitySpan{}, false
}

// isoDateAt reads YYYY-MM-DD or YYYY/MM/DD at i, not followed by a digit.
func isoDateAt(text string, i int) (entitySpan, bool) {
	end := i + 10
	if end > len(text) || end < len(text) && isDigitASCII(text[end]) {
		return entitySpan{}, false
	}
	s := text[i:end]
	sep := s[4]
	if sep != '-' && sep != '/' || s[7] != sep || digitLen(s, 5) != 2 || digitLen(s, 8) != 2 {
		return entitySpan{}, false
	}
	return dateFound(text, i, end, smallAtoi(s[:4]), smallAtoi(s[5:7]), smallAtoi(s[8:10]))
}

// dayFirstDateAt reads "30 November 2026" at i, where n digits give the
// day: an optional ordinal suffix and '.', an optional "of", the month
// name, an optional comma and the year.
func dayFirstDateAt(text string, i, n int) (entitySpan, bool) {
	if i > 0 && gluesToWord(tailRune(text[:i])) {
		return entitySpan{}, false
	}
	day := smallAtoi(text[i : i+n])
	j, ok := ordinalAt(text, i+n)
	if !ok {
		return entitySpan{}, false
	}
	if j < len(text) && text[j] == '.' {
		j++ // 30. November 2026
	}
	if s := spaceLen(text, j); s > 0 {
		j += s
	} else {
		return entitySpan{}, false
	}
	if j+2 < len(text) && equalFoldASCII(text[j:j+2], "of") {
		if s := spaceLen(text, j+2); s > 0 {
			j += 2 + s
		}
	}
	month, m, abbr := monthAt(text, j)
	if m == 0 {
		return entitySpan{}, false
	}
	j += m
	if abbr && j < len(text) && text[j] == '.' {
		j++
	}
	year, end, ok := yearAt(text, j)
	if !ok {
		return entitySpan{}, false
	}
	return dateFound(text, i, end, year, month, day)
}

// monthFirstDateAt reads "November 30, 2026" at i: the month name, an
// optional '.', the day with an optional ordinal suffix, an optional comma
// and the year.
func monthFirstDateAt(text string, i int) (entitySpan, bool) {
	if i > 0 && gluesToWord(tailRune(text[:i])) {
		return entitySpan{}, false
	}
	month, m, abbr := monthAt(text, i)
	if m == 0 {
		return entitySpan{}, false
	}
	j := i + m
	if abbr && j < len(text) && text[j] == '.' {
		j++
	}
	if s := spaceLen(text, j); s > 0 {
		j += s
	} else {
		return entitySpan{}, false
	}
	n := digitLen(text, j)
	if n < 1 || n > 2 {
		return entitySpan{}, false
	}
	day := smallAtoi(text[j : j+n])
	j, ok := ordinalAt(text, j+n)
	if !ok {
		return entitySpan{}, false
	}
	year, end, ok := yearAt(text, j)
	if !ok {
		return entitySpan{}, false
	}
	return dateFound(text, i, end, year, month, day)
}

// ordinalAt skips an ordinal suffix (st, nd, rd, th in any case) at j. It
// fails when a word goes on after the day.
func ordinalAt(text string, j int) (int, bool) {
	if j+2 <= len(text) && !entityWordAt(text, j+2) {
		switch s := text[j : j+2]; {
		case equalFoldASCII(s, "st"), equalFoldASCII(s, "nd"), equalFoldASCII(s, "rd"), equalFoldASCII(s, "th"):
			return j + 2, true
		}
	}
	return j, !entityWordAt(text, j)
}

// yearAt reads the separator before a year (a comma, spaces, or both) and
// the four-digit year at j, returning the year and where it ends.
func yearAt(text string, j int) (year, end int, ok bool) {
	k := j
	if k < len(text) && text[k] == ',' {
		k++
	}
	k += spaceLen(text, k)
	if k == j || digitLen(text, k) != 4 {
		return 0, 0, false
	}
	end = k + 4
	if end < len(text) && gluesToWord(headRune(text[end:])) {
		return 0, 0, false
	}
	return smallAtoi(text[k:end]), end, true
}

// monthNamed returns the month a lower-case English month name or
// abbreviation names, and whether it is an abbreviation; month 0 means it
// names none.
func monthNamed(name string) (month int, abbr bool) {
	switch name {
	case "january":
		return 1, false
	case "february":
		return 2, false
	case "march":
		return 3, false
	case "april":
		return 4, false
	case "may":
		return 5, false
	case "june":
		return 6, false
	case "july":
		return 7, false
	case "august":
		return 8, false
	case "september":
		return 9, false
	case "october":
		return 10, false
	case "november":
		return 11, false
	case "december":
		return 12, false
	case "jan":
		return 1, true
	case "feb":
		return 2, true
	case "mar":
		return 3, true
	case "apr":
		return 4, true
	case "jun":
		return 6, true
	case "jul":
		return 7, true
	case "aug":
		return 8, true
	case "sep", "sept":
		return 9, true
	case "oct":
		return 10, true
	case "nov":
		return 11, true
	case "dec":
		return 12, true
	}
	return 0, false
}

// monthPrefix reports whether the three ASCII letters p start an English
// month name, in any case.
func monthPrefix(p string) bool {
	switch string([]byte{p[0] | 0x20, p[1] | 0x20, p[2] | 0x20}) {
	case "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec":
		return true
	}
	return false
}

// monthAt reads a whole-word month name at j, returning the month, the
// name's length (0 when there is none) and whether it is an abbreviation.
func monthAt(text string, j int) (month, n int, abbr bool) {
	var buf [len("september")]byte
	for j+n < len(text) && isLetterASCII(text[j+n]) {
		if n == len(buf) {
			return 0, 0, false
		}
		buf[n] = text[j+n] | 0x20
		n++
	}
	if n < 3 || entityWordAt(text, j+n) {
		return 0, 0, false
	}
	month, abbr = monthNamed(string(buf[:n]))
	if month == 0 {
		return 0, 0, false
	}
	return month, n, abbr
}

// dateFound returns the date mention of text[start:end] if the date
// exists.
func dateFound(text string, start, end, year, month, day int) (entitySpan, bool) {
	if !validCalendarDate(year, month, day) {
		return entitySpan{}, false
	}
	key := [10]byte{
		byte('0' + year/1000), byte('0' + year/100%10), byte('0' + year/10%10), byte('0' + year%10), '-',
		byte('0' + month/10), byte('0' + month%10), '-',
		byte('0' + day/10), byte('0' + day%10),
	}
	return entitySpan{start: start, end: end, m: newMention(EntityDate, text[start:end], string(key[:]))}, true
}

// validCalendarDate reports whether the date exists in the proleptic
// Gregorian calendar, with a four-digit year.
func validCalendarDate(year, month, day int) bool {
	if year < 1000 || year > 9999 || month < 1 || month > 12 || day < 1 {
		return false
	}
	days := 31
	switch month {
	case 4, 6, 9, 11:
		days = 30
	case 2:
		days = 28
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			days = 29
		}
	}
	return day <= days
}

// Character classes.
