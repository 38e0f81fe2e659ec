#include "textflag.h"

// func prefetch(link *Link)
TEXT ·prefetch(SB), NOSPLIT|NOFRAME, $0-8
	MOVD	link+0(FP), R0
	PRFM	(R0), PLDL1KEEP
	RET
