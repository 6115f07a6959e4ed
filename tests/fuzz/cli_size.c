// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cli_size.c - fuzz target: the CLI's size parser, cli_parse_size()
 * (grow --bytes, trim --keep, load --init, refill-agent --bytes, the size
 * tunables), against an oracle written apart from it: a size is optional
 * white space and '+', decimal digits, then K, M or G (either case,
 * powers of 1024) or nothing, and fits in 64 bits; anything else,
 * negative numbers included, is refused with *out unchanged.
 */
#include "fuzz.h"
#include "cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const __u64 canary = 0x5a5a5a5a5a5a5a5aULL;
	__u64 got = canary, want = 0;
	char *s = fuzz_str(data, size);
	int r = cli_parse_size("--bytes", s, &got), ok = fuzz_ref_size(s, &want);

	if (r != 0 && r != -1)
		fuzz_fail("cli_parse_size(\"%s\") returned %d, not 0 or -1", fuzz_show(s), r);
	if (ok && r)
		fuzz_fail("cli_parse_size(\"%s\") refused a size (%llu)", fuzz_show(s), (unsigned long long)want);
	if (!ok && !r)
		fuzz_fail("cli_parse_size(\"%s\") took %llu from what is not a size", fuzz_show(s),
			  (unsigned long long)got);
	if (ok && got != want)
		fuzz_fail("cli_parse_size(\"%s\") = %llu, not %llu", fuzz_show(s), (unsigned long long)got,
			  (unsigned long long)want);
	if (r && got != canary)
		fuzz_fail("cli_parse_size(\"%s\") refused it but wrote %llu", fuzz_show(s),
			  (unsigned long long)got);
	free(s);
	return 0;
}
