/*
 * ProcessPrng for Wine 8.0, which lacks bcryptprimitives.dll. The Go
 * runtime fills its random numbers from ProcessPrng in that DLL, which every
 * Windows 10 and 11 has, and stops at start without it. Package wineprefix
 * compiles this into a throwaway Wine prefix's system32; the program run
 * there is unchanged. RtlGenRandom is the system's random number generator
 * that ProcessPrng draws on.
 */
#include <windows.h>
#include <ntsecapi.h>

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
	while (len > 0) {
		ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
		if (!RtlGenRandom(data, n)) {
			return FALSE;
		}
		data += n;
		len -= n;
	}
	return TRUE;
}
