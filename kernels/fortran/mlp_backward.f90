! mlp_backward (naive): backward of the gated MLP y = (silu(A) * B) W_down,
! A = x^ W_gate, B = x^ W_up.  Given only x^ and dy (no stored activations,
! as the cost model's bytes and the torch kernel assume), the timed call
! recomputes A and B (4 n d f FLOPs beyond the 12 n d f counted) and computes
!   H = silu(A) * B, dH = dy W_down^T, dA = dH * B * silu'(A), dB = dH * silu(A),
!   dW_down = H^T dy, dW_gate = x^T dA, dW_up = x^T dB, dx^ = dA W_gate^T + dB W_up^T.
! Layout identical to the C kernel: xh(d, n), a/b/h/da/db(f, n), wg/wu(f, d),
! wd(d, f).  Pass 1 parallel over rows, pass 2 over column blocks of f.
module mlp_backward_kernel
  use, intrinsic :: iso_fortran_env, only: int64, real32, real64
  use harness
  use attn_common, only: exp_fast
  implicit none
  character(len=5), parameter :: variants(1) = ['naive']
  integer(int64), parameter :: rows_chunk = 16, fb = 64
  type(harness_cfg) :: cfg
  integer(int64) :: n, d, f
  real(real32), allocatable :: xh(:, :), dy(:, :), wg(:, :), wu(:, :), wd(:, :), a(:, :), b(:, :)
  real(real32), allocatable :: h(:, :), da(:, :), db(:, :), dxh(:, :), dwg(:, :), dwu(:, :), dwd(:, :)

contains

  logical function setup(c)
    type(harness_cfg), intent(in) :: c
    integer :: st(14)
    cfg = c
    n = c%n
    d = c%d
    f = c%ff
    allocate (xh(d, n), stat=st(1))
    allocate (dy(d, n), stat=st(2))
    allocate (dxh(d, n), stat=st(3))
    allocate (wg(f, d), stat=st(4))
    allocate (wu(f, d), stat=st(5))
    allocate (wd(d, f), stat=st(6))
    allocate (dwg(f, d), stat=st(7))
    allocate (dwu(f, d), stat=st(8))
    allocate (dwd(d, f), stat=st(9))
    allocate (a(f, n), stat=st(10))
    allocate (b(f, n), stat=st(11))
    allocate (h(f, n), stat=st(12))
    allocate (da(f, n), stat=st(13))
    allocate (db(f, n), stat=st(14))
    setup = all(st == 0)
    if (.not. setup) then
      call teardown()
      return
    end if
    call fill_normal(xh, n, d, rows_chunk, c%seed, 1_int64)
    call fill_normal(dy, n, d, rows_chunk, c%seed, 2_int64)
    call fill_normal(wg, d, f, 1_int64, c%seed, 3_int64)
    call fill_normal(wu, d, f, 1_int64, c%seed, 4_int64)
    call fill_normal(wd, f, d, 1_int64, c%seed, 5_int64)
    ! as the torch kernels draw them: normal / sqrt(fan_in)
    wg = wg * (1.0_real32 / sqrt(real(d, real32)))
    wu = wu * (1.0_real32 / sqrt(real(d, real32)))
    wd = wd * (1.0_real32 / sqrt(real(f, real32)))
    call fill_nan(a, n, f, rows_chunk)
    call fill_nan(b, n, f, rows_chunk)
    call fill_nan(h, n, f, rows_chunk)
    call fill_nan(da, n, f, rows_chunk)
    call fill_nan(db, n, f, rows_chunk)
    call poison()
  end function setup

  subroutine poison()
    call fill_nan(dxh, n, d, rows_chunk)
    call fill_nan(dwg, d, f, 1_int64)
    call fill_nan(dwu, d, f, 1_int64)
    call fill_nan(dwd, f, d, fb)
  end subroutine poison

  subroutine run()
    integer(int64) :: ch, r, j, k, blk, j0, j1
    real(real32) :: sig, silu, dh
    !$omp parallel private(ch, r, j, k, blk, j0, j1, sig, silu, dh)
    !$omp do schedule(static)
    do ch = 0, (n + rows_chunk - 1) / rows_chunk - 1
      do r = ch * rows_chunk + 1, min((ch + 1) * rows_chunk, n)
        a(:, r) = 0
        b(:, r) = 0
        do k = 1, d
          a(:, r) = a(:, r) + xh(k, r) * wg(:, k)
          b(:, r) = b(:, r) + xh(k, r) * wu(:, k)
        end do
        do j = 1, f
          da(j, r) = dot_product(dy(:, r), wd(:, j))
        end do
        do j = 1, f
          sig = 1.0_real32 / (1.0_real32 + exp_fast(-a(j, r)))
          silu = a(j, r) * sig
          dh = da(j, r)
          h(j, r) = silu * b(j, r)
          da(j, r) = dh * b(j, r) * sig * (1.0_real32 + a(j, r) * (1.0_real32 - sig))
          db(j, r) = dh * silu
        end do
        do k = 1, d
          dxh(k, r) = dot_product(da(:, r), wg(:, k)) + dot_product(db(:, r), wu(:, k))
        end do
      end do
    end do
    !$omp end do
    !$omp do schedule(static)
    do blk = 0, (f + fb - 1) / fb - 1
      j0 = blk * fb + 1
      j1 = min((blk + 1) * fb, f)
      dwg(j0:j1, :) = 0
      dwu(j0:j1, :) = 0
      dwd(:, j0:j1) = 0
      do r = 1, n
        do k = 1, d
          dwg(j0:j1, k) = dwg(j0:j1, k) + xh(k, r) * da(j0:j1, r)
          dwu(j0:j1, k) = dwu(j0:j1, k) + xh(k, r) * db(j0:j1, r)
        end do
        do j = j0, j1
          dwd(:, j) = dwd(:, j) + h(j, r) * dy(:, r)
        end do
      end do
    end do
    !$omp end do
    !$omp end parallel
  end subroutine run

  ! all rows (the weight gradients sum over them), O(n d f) in float64;
  ! A, B recomputed from x^ in double, not taken from the float store
  function check() result(err)
    real(real64) :: err
    real(real64), allocatable :: rh(:, :), rda(:, :), rdb(:, :), rdx(:, :), rwg(:, :), rwu(:, :), rwd(:, :)
    real(real64) :: av, bv, dh, sig
    integer(int64) :: r, j, k
    allocate (rh(f, n), rda(f, n), rdb(f, n), rdx(d, n), rwg(f, d), rwu(f, d), rwd(d, f))
    !$omp parallel do schedule(static) private(j, av, bv, dh, sig)
    do r = 1, n
      do j = 1, f
        av = dot_product(real(xh(:, r), real64), real(wg(j, :), real64))
        bv = dot_product(real(xh(:, r), real64), real(wu(j, :), real64))
        dh = dot_product(real(dy(:, r), real64), real(wd(:, j), real64))
        sig = 1.0_real64 / (1.0_real64 + exp(-av))
        rh(j, r) = av * sig * bv
        rda(j, r) = dh * bv * sig * (1.0_real64 + av * (1.0_real64 - sig))
        rdb(j, r) = dh * av * sig
      end do
    end do
    !$omp end parallel do
    !$omp parallel do schedule(static) private(k)
    do r = 1, n
      do k = 1, d
        rdx(k, r) = dot_product(rda(:, r), real(wg(:, k), real64)) + dot_product(rdb(:, r), real(wu(:, k), real64))
      end do
    end do
    !$omp end parallel do
    !$omp parallel do schedule(static) private(r, k)
    do j = 1, f
      rwg(j, :) = 0
      rwu(j, :) = 0
      rwd(:, j) = 0
      do r = 1, n
        do k = 1, d
          rwg(j, k) = rwg(j, k) + real(xh(k, r), real64) * rda(j, r)
          rwu(j, k) = rwu(j, k) + real(xh(k, r), real64) * rdb(j, r)
        end do
        rwd(:, j) = rwd(:, j) + rh(j, r) * real(dy(:, r), real64)
      end do
    end do
    !$omp end parallel do
    err = rel_err(dxh, rdx, n * d)
    err = rel_worst(err, rel_err(dwg, rwg, d * f))
    err = rel_worst(err, rel_err(dwu, rwu, d * f))
    err = rel_worst(err, rel_err(dwd, rwd, d * f))
  end function check

  logical function dump(dir)
    character(len=*), intent(in) :: dir
    call dump_open(dir, 'mlp_backward', 'naive', cfg)
    call dump_array('xhat', xh, [n, d])
    call dump_array('dy', dy, [n, d])
    call dump_array('w_gate', wg, [d, f])
    call dump_array('w_up', wu, [d, f])
    call dump_array('w_down', wd, [f, d])
    call dump_array('dxhat', dxh, [n, d])
    call dump_array('dw_gate', dwg, [d, f])
    call dump_array('dw_up', dwu, [d, f])
    call dump_array('dw_down', dwd, [f, d])
    dump = dump_close()
  end function dump

  subroutine teardown()
    if (allocated(xh)) deallocate (xh)
    if (allocated(dy)) deallocate (dy)
    if (allocated(dxh)) deallocate (dxh)
    if (allocated(wg)) deallocate (wg)
    if (allocated(wu)) deallocate (wu)
    if (allocated(wd)) deallocate (wd)
    if (allocated(dwg)) deallocate (dwg)
    if (allocated(dwu)) deallocate (dwu)
    if (allocated(dwd)) deallocate (dwd)
    if (allocated(a)) deallocate (a)
    if (allocated(b)) deallocate (b)
    if (allocated(h)) deallocate (h)
    if (allocated(da)) deallocate (da)
    if (allocated(db)) deallocate (db)
  end subroutine teardown

end module mlp_backward_kernel

program mlp_backward
  use mlp_backward_kernel
  call harness_main('mlp_backward', variants, .true., setup, poison, run, check, dump, teardown)
end program mlp_backward
