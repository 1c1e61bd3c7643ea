//go:build amd64 && !purego

#include "textflag.h"

// func dotAVX2(a, b *float32, n int) float32
//
// Eight chains of 8 lanes, 64 values per step, summed in exactly the order
// of dotAVX512 (Y0..Y7 are its Z0..Z3 in halves), so both kernels return
// the same bits and a score does not depend on which one the CPU runs.
TEXT ·dotAVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

loop64:
	CMPQ CX, $64
	JL   loop16
	VMOVUPS (SI), Y8
	VMOVUPS 32(SI), Y9
	VMOVUPS 64(SI), Y10
	VMOVUPS 96(SI), Y11
	VFMADD231PS (DI), Y8, Y0
	VFMADD231PS 32(DI), Y9, Y1
	VFMADD231PS 64(DI), Y10, Y2
	VFMADD231PS 96(DI), Y11, Y3
	VMOVUPS 128(SI), Y8
	VMOVUPS 160(SI), Y9
	VMOVUPS 192(SI), Y10
	VMOVUPS 224(SI), Y11
	VFMADD231PS 128(DI), Y8, Y4
	VFMADD231PS 160(DI), Y9, Y5
	VFMADD231PS 192(DI), Y10, Y6
	VFMADD231PS 224(DI), Y11, Y7
	ADDQ $256, SI
	ADDQ $256, DI
	SUBQ $64, CX
	JMP  loop64

loop16:
	CMPQ CX, $16
	JL   reduce
	VMOVUPS (SI), Y8
	VMOVUPS 32(SI), Y9
	VFMADD231PS (DI), Y8, Y0
	VFMADD231PS 32(DI), Y9, Y1
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  loop16

reduce:
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	VADDPS Y6, Y4, Y4
	VADDPS Y7, Y5, Y5
	VADDPS Y4, Y0, Y0
	VADDPS Y5, Y1, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0

tail:
	TESTQ CX, CX
	JE    done
	VMOVSS (SI), X1
	VFMADD231SS (DI), X1, X0
	ADDQ $4, SI
	ADDQ $4, DI
	DECQ CX
	JMP  tail

done:
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotAVX512(a, b *float32, n int) float32
//
// Four chains of 16 lanes, 64 values per step: a 384-dimension dot is six
// dependent steps per chain. dotAVX2 sums in the same order.
TEXT ·dotAVX512(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

loop64:
	CMPQ CX, $64
	JL   loop16
	VMOVUPS (SI), Z4
	VMOVUPS 64(SI), Z5
	VMOVUPS 128(SI), Z6
	VMOVUPS 192(SI), Z7
	VFMADD231PS (DI), Z4, Z0
	VFMADD231PS 64(DI), Z5, Z1
	VFMADD231PS 128(DI), Z6, Z2
	VFMADD231PS 192(DI), Z7, Z3
	ADDQ $256, SI
	ADDQ $256, DI
	SUBQ $64, CX
	JMP  loop64

loop16:
	CMPQ CX, $16
	JL   reduce
	VMOVUPS (SI), Z4
	VFMADD231PS (DI), Z4, Z0
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  loop16

reduce:
	VADDPS Z1, Z0, Z0
	VADDPS Z3, Z2, Z2
	VADDPS Z2, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0

tail512:
	TESTQ CX, CX
	JE    done512
	VMOVSS (SI), X1
	VFMADD231SS (DI), X1, X0
	ADDQ $4, SI
	ADDQ $4, DI
	DECQ CX
	JMP  tail512

done512:
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func cosineAVX2(a, b *float32, n int) (d, na, nb float32)
TEXT ·cosineAVX2(SB), NOSPLIT, $0-36
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5

cloop16:
	CMPQ CX, $16
	JL   cloop8
	VMOVUPS (SI), Y6
	VMOVUPS 32(SI), Y7
	VMOVUPS (DI), Y8
	VMOVUPS 32(DI), Y9
	VFMADD231PS Y8, Y6, Y0
	VFMADD231PS Y9, Y7, Y1
	VFMADD231PS Y6, Y6, Y2
	VFMADD231PS Y7, Y7, Y3
	VFMADD231PS Y8, Y8, Y4
	VFMADD231PS Y9, Y9, Y5
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  cloop16

cloop8:
	CMPQ CX, $8
	JL   creduce
	VMOVUPS (SI), Y6
	VMOVUPS (DI), Y8
	VFMADD231PS Y8, Y6, Y0
	VFMADD231PS Y6, Y6, Y2
	VFMADD231PS Y8, Y8, Y4
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  cloop8

creduce:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y5, Y4, Y4
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VEXTRACTF128 $1, Y2, X3
	VADDPS X3, X2, X2
	VHADDPS X2, X2, X2
	VHADDPS X2, X2, X2
	VEXTRACTF128 $1, Y4, X5
	VADDPS X5, X4, X4
	VHADDPS X4, X4, X4
	VHADDPS X4, X4, X4

ctail:
	TESTQ CX, CX
	JE    cdone
	VMOVSS (SI), X6
	VMOVSS (DI), X8
	VFMADD231SS X8, X6, X0
	VFMADD231SS X6, X6, X2
	VFMADD231SS X8, X8, X4
	ADDQ $4, SI
	ADDQ $4, DI
	DECQ CX
	JMP  ctail

cdone:
	VZEROUPPER
	MOVSS X0, d+24(FP)
	MOVSS X2, na+28(FP)
	MOVSS X4, nb+32(FP)
	RET

// int8 blocks of 32: |a| as unsigned bytes times b·sign(a) as signed bytes
// (VPMADDUBSW), pairs widened to int32 (VPMADDWD by ones). Inputs lie in
// [-127, 127] so a pair sum is at most 2·127·127 < 32767: no saturation.

// func dotInt8AVX2(a, b *int8, n int) int32
TEXT ·dotInt8AVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VPXOR     Y0, Y0, Y0
	VPCMPEQW  Y15, Y15, Y15
	VPSRLW    $15, Y15, Y15

iloop:
	CMPQ CX, $32
	JL   ireduce
	VMOVDQU    (SI), Y1
	VMOVDQU    (DI), Y2
	VPSIGNB    Y1, Y2, Y2
	VPABSB     Y1, Y1
	VPMADDUBSW Y2, Y1, Y3
	VPMADDWD   Y15, Y3, Y3
	VPADDD     Y3, Y0, Y0
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $32, CX
	JMP  iloop

ireduce:
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0x4E, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xB1, X0, X1
	VPADDD       X1, X0, X0
	VMOVD        X0, AX
	VZEROUPPER
	MOVL AX, ret+24(FP)
	RET

// func dotInt8RowsAVX2(q, rows *int8, stride, nrows int, out *int32)
TEXT ·dotInt8RowsAVX2(SB), NOSPLIT, $0-40
	MOVQ q+0(FP), R8
	MOVQ rows+8(FP), DI
	MOVQ stride+16(FP), R9
	MOVQ nrows+24(FP), R10
	MOVQ out+32(FP), R11
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15

rrow:
	TESTQ R10, R10
	JE    rdone
	MOVQ  R8, SI
	MOVQ  R9, CX
	VPXOR Y0, Y0, Y0
	VPXOR Y4, Y4, Y4

rloop64:
	CMPQ CX, $64
	JL   rloop32
	VMOVDQU    (SI), Y1
	VMOVDQU    (DI), Y2
	VMOVDQU    32(SI), Y5
	VMOVDQU    32(DI), Y6
	VPSIGNB    Y1, Y2, Y2
	VPABSB     Y1, Y1
	VPSIGNB    Y5, Y6, Y6
	VPABSB     Y5, Y5
	VPMADDUBSW Y2, Y1, Y3
	VPMADDUBSW Y6, Y5, Y7
	VPMADDWD   Y15, Y3, Y3
	VPMADDWD   Y15, Y7, Y7
	VPADDD     Y3, Y0, Y0
	VPADDD     Y7, Y4, Y4
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $64, CX
	JMP  rloop64

rloop32:
	CMPQ CX, $32
	JL   rreduce
	VMOVDQU    (SI), Y1
	VMOVDQU    (DI), Y2
	VPSIGNB    Y1, Y2, Y2
	VPABSB     Y1, Y1
	VPMADDUBSW Y2, Y1, Y3
	VPMADDWD   Y15, Y3, Y3
	VPADDD     Y3, Y0, Y0
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $32, CX
	JMP  rloop32

rreduce:
	VPADDD       Y4, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0x4E, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xB1, X0, X1
	VPADDD       X1, X0, X0
	VMOVD        X0, AX
	MOVL         AX, (R11)
	ADDQ $4, R11
	DECQ R10
	JMP  rrow

rdone:
	VZEROUPPER
	RET

// func prefetchRowsAVX2(base unsafe.Pointer, ids *uint32, n, rowBytes int)
TEXT ·prefetchRowsAVX2(SB), NOSPLIT, $0-32
	MOVQ base+0(FP), SI
	MOVQ ids+8(FP), DI
	MOVQ n+16(FP), CX
	MOVQ rowBytes+24(FP), DX

wloop:
	TESTQ CX, CX
	JE    wdone
	MOVL  (DI), AX
	IMULQ DX, AX
	LEAQ  (SI)(AX*1), R8
	MOVQ  DX, R9

wline:
	PREFETCHT0 (R8)
	ADDQ  $64, R8
	SUBQ  $64, R9
	JG    wline
	ADDQ  $4, DI
	DECQ  CX
	JMP   wloop

wdone:
	RET
