#include "textflag.h"

// func prefetch(link *Link)
TEXT ·prefetch(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ	link+0(FP), AX
	PREFETCHT0	(AX)
	RET
