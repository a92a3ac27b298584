! attention_fwdbwd (fused): forward and backward with no n x n buffer.  The
! forward is the tiled online-softmax memopt kernel, keeping lse (the row
! log-sum-exp); the backward recomputes scores tile by tile, P = exp(S - lse):
!   D_i = dO_i . O_i
!   dK/dV pass, parallel over key tiles: dV += P^T dO, dK += dS^T Q s
!   dQ pass, parallel over query rows:   dQ += dS K s
! with dS = P * (dO V^T - D).  Two recompute passes avoid races on dQ.
module attention_fwdbwd_kernel
  use, intrinsic :: iso_fortran_env, only: int64, real32, real64
  use harness
  use attn_common
  implicit none
  character(len=5), parameter :: variants(1) = ['fused']
  type(harness_cfg) :: cfg
  integer(int64) :: n, d
  real(real32), allocatable :: q(:, :), k(:, :), v(:, :), g(:, :), o(:, :), lse(:), dsum(:)
  real(real32), allocatable :: dq(:, :), dk(:, :), dv(:, :), kp(:, :, :), vp(:, :, :)

contains

  logical function setup(c)
    type(harness_cfg), intent(in) :: c
    integer :: st(13)
    integer(int64) :: tiles
    cfg = c
    n = c%n
    d = c%d
    tiles = (n + bk - 1) / bk
    allocate (q(d, n), stat=st(1))
    allocate (k(d, n), stat=st(2))
    allocate (v(d, n), stat=st(3))
    allocate (g(d, n), stat=st(4))
    allocate (o(d, n), stat=st(5))
    allocate (lse(n), stat=st(6))
    allocate (dsum(n), stat=st(7))
    allocate (dq(d, n), stat=st(8))
    allocate (dk(d, n), stat=st(9))
    allocate (dv(d, n), stat=st(10))
    allocate (kp(bk, d, tiles), stat=st(11))
    allocate (vp(bk, d, tiles), stat=st(12))
    st(13) = 0
    setup = all(st == 0)
    if (.not. setup) then
      call teardown()
      return
    end if
    ! query-side arrays by bq-row tiles, key-side arrays by bk-row tiles
    call fill_normal(q, n, d, bq, c%seed, 1_int64)
    call fill_normal(k, n, d, bk, c%seed, 2_int64)
    call fill_normal(v, n, d, bk, c%seed, 3_int64)
    call fill_normal(g, n, d, bq, c%seed, 4_int64)
    call fill_nan(lse, n, 1_int64, bq)
    call fill_nan(dsum, n, 1_int64, bq)
    call fill_nan(kp, tiles, bk * d, 1_int64)
    call fill_nan(vp, tiles, bk * d, 1_int64)
    call poison()
  end function setup

  subroutine poison()
    call fill_nan(o, n, d, bq)
    call fill_nan(dq, n, d, bq)
    call fill_nan(dk, n, d, bk)
    call fill_nan(dv, n, d, bk)
  end subroutine poison

  ! scores s(j) = (q_i . k_j) scale and dp(j) = dO_i . v_j for one key tile
  subroutine tile_rows(qi, gi, kt, vt, scale, s, dp)
    real(real32), intent(in) :: qi(d), gi(d), kt(bk, d), vt(bk, d), scale
    real(real32), intent(out) :: s(bk), dp(bk)
    integer(int64) :: c
    s = 0
    dp = 0
    do c = 1, d
      s = s + (qi(c) * scale) * kt(:, c)
      dp = dp + gi(c) * vt(:, c)
    end do
  end subroutine tile_rows

  subroutine run()
    real(real32) :: scale, s(bk), dp(bk)
    integer(int64) :: i, j, t, j0, nj, tiles
    scale = 1.0_real32 / sqrt(real(d, real32))
    tiles = (n + bk - 1) / bk
    call memopt_forward(q, k, v, o, lse, .true., kp, n, d)
    call pack_tiles(v, vp, n, d)
    !$omp parallel private(s, dp, i, j, j0, nj, t)
    !$omp do schedule(static)
    do t = 1, (n + bq - 1) / bq
      do i = (t - 1) * bq + 1, min(t * bq, n)
        dsum(i) = dot_product(g(:, i), o(:, i))
      end do
    end do
    !$omp end do
    ! dK, dV: each thread owns whole key tiles
    !$omp do schedule(static)
    do t = 1, tiles
      j0 = (t - 1) * bk
      nj = min(bk, n - j0)
      dk(:, j0 + 1:j0 + nj) = 0
      dv(:, j0 + 1:j0 + nj) = 0
      do i = 1, n
        call tile_rows(q(:, i), g(:, i), kp(:, :, t), vp(:, :, t), scale, s, dp)
        s = exp_fast(s - lse(i))
        dp = s * (dp - dsum(i)) * scale
        do j = 1, nj
          dv(:, j0 + j) = dv(:, j0 + j) + s(j) * g(:, i)
          dk(:, j0 + j) = dk(:, j0 + j) + dp(j) * q(:, i)
        end do
      end do
    end do
    !$omp end do
    ! dQ: each thread owns bq-row query tiles
    !$omp do schedule(static)
    do t = 1, (n + bq - 1) / bq
      do i = (t - 1) * bq + 1, min(t * bq, n)
        dq(:, i) = 0
        do j0 = 0, n - 1, bk
          nj = min(bk, n - j0)
          call tile_rows(q(:, i), g(:, i), kp(:, :, j0 / bk + 1), vp(:, :, j0 / bk + 1), scale, s, dp)
          dp = exp_fast(s - lse(i)) * (dp - dsum(i)) * scale
          do j = 1, nj
            dq(:, i) = dq(:, i) + dp(j) * k(:, j0 + j)
          end do
        end do
      end do
    end do
    !$omp end do
    !$omp end parallel
  end subroutine run

  ! gradients need all rows (dK, dV sum over queries): only n <= check_all_rows
  function check() result(err)
    real(real64) :: err
    real(real64), allocatable :: ro(:, :), rq(:, :), rk(:, :), rv(:, :)
    integer(int64), allocatable :: rows(:)
    err = not_checked
    if (n > check_all_rows) return
    rows = check_rows(n)
    allocate (ro(d, n), rq(d, n), rk(d, n), rv(d, n))
    call ref_attention_rows(q, k, v, n, d, rows, ro)
    call ref_attention_backward(q, k, v, g, n, d, rq, rk, rv)
    err = rel_err(o, ro, n * d)
    err = rel_worst(err, rel_err(dq, rq, n * d))
    err = rel_worst(err, rel_err(dk, rk, n * d))
    err = rel_worst(err, rel_err(dv, rv, n * d))
  end function check

  logical function dump(dir)
    character(len=*), intent(in) :: dir
    call dump_open(dir, 'attention_fwdbwd', 'fused', cfg)
    call dump_array('q', q, [n, d])
    call dump_array('k', k, [n, d])
    call dump_array('v', v, [n, d])
    call dump_array('do', g, [n, d])
    call dump_array('o', o, [n, d])
    call dump_array('lse', lse, [n])
    call dump_array('dq', dq, [n, d])
    call dump_array('dk', dk, [n, d])
    call dump_array('dv', dv, [n, d])
    dump = dump_close()
  end function dump

  subroutine teardown()
    if (allocated(q)) deallocate (q)
    if (allocated(k)) deallocate (k)
    if (allocated(v)) deallocate (v)
    if (allocated(g)) deallocate (g)
    if (allocated(o)) deallocate (o)
    if (allocated(lse)) deallocate (lse)
    if (allocated(dsum)) deallocate (dsum)
    if (allocated(dq)) deallocate (dq)
    if (allocated(dk)) deallocate (dk)
    if (allocated(dv)) deallocate (dv)
    if (allocated(kp)) deallocate (kp)
    if (allocated(vp)) deallocate (vp)
  end subroutine teardown

end module attention_fwdbwd_kernel

program attention_fwdbwd
  use attention_fwdbwd_kernel
  call harness_main('attention_fwdbwd', variants, .false., setup, poison, run, check, dump, teardown)
end program attention_fwdbwd
